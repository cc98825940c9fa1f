//! How a partly loaded group reads in the terminal, in `toolgate route` and
//! in chat's `/groups`: `gmail (2 of 14 tools: gmail_send, gmail_search)`.

/// `{group} ({k} of {n} tools: {tool}, ...)`, the tools in load order.
pub(crate) fn describe_partial<T: AsRef<str>>(
    group: &str,
    tools: &[T],
    group_tools: usize,
) -> String {
    let names: Vec<&str> = tools.iter().map(AsRef::as_ref).collect();
    format!(
        "{group} ({} of {group_tools} tools: {})",
        names.len(),
        names.join(", ")
    )
}
