//! What keeping a load within the budget takes ([`BudgetPlan`]), and what
//! the load's answer says of it ([`UnloadedForBudget`], whose text is in
//! `contract.rs`).

use crate::name::{GroupId, ToolName};

/// What keeping within the budget takes before a load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetPlan {
    /// The budget, in tokens (0 when there is none).
    pub budget: usize,
    /// What to unload first, least recently used first.
    pub unload: Vec<Unload>,
    /// The group loaded when it alone is over the budget: then every other
    /// group is unloaded.
    pub oversized: Option<Oversized>,
}

/// One thing the budget unloads: a group loaded whole goes whole; of a group
/// loaded in part (named tools, a search's or a router's), each tool goes on
/// its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unload {
    /// The group, loaded whole.
    Group(GroupId),
    /// This tool of the group.
    Tool(GroupId, ToolName),
}

/// A group larger than the whole budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Oversized {
    /// The group.
    pub group: GroupId,
    /// Tokens of its schemas.
    pub tokens: usize,
    /// The budget.
    pub budget: usize,
}

/// What a load's answer adds when the budget unloaded groups for it; its
/// `Display` is the text the model reads (in `contract.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnloadedForBudget<'a>(pub &'a BudgetPlan);

impl BudgetPlan {
    /// Whether the load needs nothing unloaded.
    pub fn is_empty(&self) -> bool {
        self.unload.is_empty() && self.oversized.is_none()
    }
}
