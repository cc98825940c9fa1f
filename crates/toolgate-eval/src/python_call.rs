//! A gold call written as Python source, `cd(folder='document')`, read into
//! a tool name and JSON arguments: how multi-turn datasets such as BFCL's
//! write their ground truth.
//!
//! Literals are strings (single or double quotes, backslash escapes),
//! numbers, `True`, `False`, `None`, lists, tuples (as arrays) and dicts.
//! Positional arguments take the names of the tool's parameters in the
//! order its schema lists them.

use serde_json::{Map, Number, Value};

/// A call read from its source text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PythonCall {
    /// The function called.
    pub(crate) name: String,
    /// Arguments without a name, in order.
    pub(crate) positional: Vec<Value>,
    /// Named arguments, in order.
    pub(crate) named: Vec<(String, Value)>,
}

impl PythonCall {
    /// Reads `text`; `None` when it is not a call of literals.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut parser = Parser {
            chars: text.chars().collect(),
            at: 0,
        };
        let call = parser.call()?;
        parser.blank();
        (parser.at == parser.chars.len()).then_some(call)
    }

    /// The arguments as one JSON object: the named ones, and the positional
    /// ones under the names of `schema`'s properties in order (one past
    /// them is dropped).
    pub(crate) fn arguments(&self, schema: &Map<String, Value>) -> Map<String, Value> {
        let names = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let mut arguments = Map::new();
        for (name, value) in names.into_iter().zip(&self.positional) {
            arguments.insert(name, value.clone());
        }
        for (name, value) in &self.named {
            arguments.insert(name.clone(), value.clone());
        }
        arguments
    }
}

/// The name before the parenthesis of a call's text, for a call
/// [`PythonCall::parse`] cannot read.
pub(crate) fn called_name(text: &str) -> &str {
    text.split('(').next().unwrap_or(text).trim()
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn blank(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.at += 1;
        }
    }

    /// Skips blanks, then takes `expected` if it is next.
    fn eat(&mut self, expected: char) -> bool {
        self.blank();
        if self.peek() == Some(expected) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn identifier(&mut self) -> Option<String> {
        self.blank();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        {
            self.at += 1;
        }
        (self.at > start).then(|| self.chars[start..self.at].iter().collect())
    }

    fn call(&mut self) -> Option<PythonCall> {
        let name = self.identifier()?;
        if !self.eat('(') {
            return None;
        }
        let mut call = PythonCall {
            name,
            positional: Vec::new(),
            named: Vec::new(),
        };
        loop {
            if self.eat(')') {
                return Some(call);
            }
            let start = self.at;
            match self.identifier() {
                Some(name) if self.eat('=') => call.named.push((name, self.literal()?)),
                _ => {
                    self.at = start;
                    call.positional.push(self.literal()?);
                }
            }
            if !self.eat(',') {
                return self.eat(')').then_some(call);
            }
        }
    }

    fn literal(&mut self) -> Option<Value> {
        self.blank();
        match self.peek()? {
            quote @ ('\'' | '"') => self.string(quote).map(Value::String),
            '[' => self.sequence(']'),
            '(' => self.sequence(')'),
            '{' => self.dict(),
            c if c == '-' || c == '+' || c.is_ascii_digit() || c == '.' => self.number(),
            _ => match self.identifier()?.as_str() {
                "True" => Some(Value::Bool(true)),
                "False" => Some(Value::Bool(false)),
                "None" => Some(Value::Null),
                _ => None,
            },
        }
    }

    fn string(&mut self, quote: char) -> Option<String> {
        self.at += 1;
        let mut text = String::new();
        loop {
            let c = self.peek()?;
            self.at += 1;
            match c {
                '\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    text.push(match escaped {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                }
                c if c == quote => return Some(text),
                c => text.push(c),
            }
        }
    }

    /// A list or tuple, its opening bracket next, as an array.
    fn sequence(&mut self, close: char) -> Option<Value> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(close) {
                return Some(Value::Array(items));
            }
            items.push(self.literal()?);
            if !self.eat(',') {
                return self.eat(close).then_some(Value::Array(items));
            }
        }
    }

    fn dict(&mut self) -> Option<Value> {
        self.at += 1;
        let mut entries = Map::new();
        loop {
            if self.eat('}') {
                return Some(Value::Object(entries));
            }
            let key = match self.literal()? {
                Value::String(key) => key,
                other => other.to_string(),
            };
            if !self.eat(':') {
                return None;
            }
            entries.insert(key, self.literal()?);
            if !self.eat(',') {
                return self.eat('}').then_some(Value::Object(entries));
            }
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E' | '_'))
        {
            self.at += 1;
        }
        let text: String = self.chars[start..self.at]
            .iter()
            .filter(|c| **c != '_')
            .collect();
        if let Ok(integer) = text.parse::<i64>() {
            return Some(Value::Number(integer.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
    }
}

#[cfg(test)]
#[path = "python_call_tests.rs"]
mod tests;
