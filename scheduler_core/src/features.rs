//! Node features and job constraints: which nodes a job's constraint admits.
//!
//! The syntax is the simple one of batch schedulers' feature constraints:
//! `a` (the node has feature a), `a&b` (all of them; `,` also means and),
//! `a|b` (any of them), with `[` `]` and `(` `)` grouping. Or binds looser
//! than and (`a&b|c` is `(a&b)|c`). A count suffix (`a*2`) is ignored:
//! every node of the job must satisfy the whole constraint. A bracketed
//! "matching or" (`[a|b]`, all nodes with the same alternative) is read as a
//! plain or. Each distinct constraint is evaluated once against every node.

/// A constraint in disjunctive form: any of the terms, each term all of its features.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint<'a> {
    pub any: Vec<Vec<&'a str>>,
}

fn tokens(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, ch) in s.char_indices() {
        if matches!(ch, '&' | '|' | ',' | '(' | ')' | '[' | ']') || ch.is_whitespace() {
            if let Some(st) = start.take() {
                out.push(&s[st..i]);
            }
            if !ch.is_whitespace() {
                out.push(&s[i..i + ch.len_utf8()]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        out.push(&s[st..]);
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<&'a str>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.pos).copied()
    }
    /// or := and ('|' and)*
    fn or(&mut self) -> Result<Vec<Vec<&'a str>>, String> {
        let mut any = self.and()?;
        while self.peek() == Some("|") {
            self.pos += 1;
            any.extend(self.and()?);
        }
        Ok(any)
    }
    /// and := atom (('&'|',') atom)*; the product of the atoms' disjunctions.
    fn and(&mut self) -> Result<Vec<Vec<&'a str>>, String> {
        let mut acc = self.atom()?;
        while matches!(self.peek(), Some("&") | Some(",")) {
            self.pos += 1;
            let rhs = self.atom()?;
            let mut next = Vec::with_capacity(acc.len() * rhs.len());
            for a in &acc {
                for b in &rhs {
                    let mut t = a.clone();
                    t.extend(b.iter().copied());
                    next.push(t);
                }
            }
            if next.len() > 4096 {
                return Err("too many alternatives".into());
            }
            acc = next;
        }
        Ok(acc)
    }
    fn atom(&mut self) -> Result<Vec<Vec<&'a str>>, String> {
        match self.peek() {
            Some(open @ ("(" | "[")) => {
                self.pos += 1;
                let inner = self.or()?;
                let close = if open == "(" { ")" } else { "]" };
                if self.peek() != Some(close) {
                    return Err(format!("missing {close:?}"));
                }
                self.pos += 1;
                // A count after a group ("[a|b]*2") is ignored like any other.
                if let Some(t) = self.peek() {
                    if t.starts_with('*') {
                        self.pos += 1;
                    }
                }
                Ok(inner)
            }
            Some(t) if !matches!(t, "&" | "|" | "," | ")" | "]") => {
                self.pos += 1;
                let name = t.split('*').next().unwrap_or(t);
                if name.is_empty() {
                    return Err(format!("no feature name in {t:?}"));
                }
                Ok(vec![vec![name]])
            }
            Some(t) => Err(format!("unexpected {t:?}")),
            None => Err("ends early".into()),
        }
    }
}

impl<'a> Constraint<'a> {
    pub fn parse(s: &'a str) -> Result<Constraint<'a>, String> {
        let toks = tokens(s)?;
        let mut p = Parser { toks, pos: 0 };
        let any = p.or()?;
        if let Some(t) = p.peek() {
            return Err(format!("unexpected {t:?}"));
        }
        Ok(Constraint { any })
    }

    pub fn admits(&self, features: &[&str]) -> bool {
        self.any
            .iter()
            .any(|all| all.iter().all(|f| features.contains(f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str, f: &[&str]) -> bool {
        Constraint::parse(c).expect("parses").admits(f)
    }

    #[test]
    fn single_and_or_brackets_and_counts() {
        assert!(ok("a100", &["a100", "ib"]));
        assert!(!ok("h100", &["a100", "ib"]));
        assert!(ok("a100&ib", &["a100", "ib"]));
        assert!(!ok("a100&nvlink", &["a100", "ib"]));
        assert!(ok("h100|a100", &["a100"]));
        assert!(ok("[h100|a100]", &["a100"]));
        assert!(ok("a100*2", &["a100"]));
        assert!(ok("ib&[h100|a100]", &["a100", "ib"]));
        assert!(!ok("ib&[h100|a100]", &["a100"]));
        assert!(ok("a&b|c", &["c"]));
        assert!(!ok("a&(b|c)", &["c"]));
        assert!(ok("a,b", &["b", "a"]));
    }

    #[test]
    fn bad_syntax_is_an_error() {
        assert!(Constraint::parse("a&").is_err());
        assert!(Constraint::parse("[a|b").is_err());
        assert!(Constraint::parse("").is_err());
        assert!(Constraint::parse("a)").is_err());
    }
}
