//! How many rows a running SQL statement may read, told from its text (SQL "SELECT", the LIMIT and
//! OFFSET clauses): a statement without `LIMIT` is stepped until SQLite finds no more rows unless the
//! application stops it, one with a top-level `LIMIT n OFFSET m` (or `LIMIT m, n`) of integer literals
//! reads its first `n + m` rows of the scan that feeds it, or fewer, and anything else is not known.
//!
//! The extension asks this of the statement its connection is running ([`crate::connection`]) before it
//! lists a small table's full index scan ahead on a seek-bound device (paper s5.4's scan, listed whole):
//! what it lists past the rows the statement reads is requests stock SQLite never makes.
//!
//! Deviations: a hand-written scanner, not an SQL parser crate: the extension needs only the keywords
//! at parenthesis depth 0 outside quotes and comments, in SQLite's own lexical rules (tokenize.c:
//! `'...'` strings, `"..."`, `` `...` `` and `[...]` identifiers, `--` and `/* */` comments), and a full
//! parser of SQLite's dialect would weigh more than the rest of the extension.

/// What a statement's text says of the rows it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowBound {
    /// No `LIMIT` anywhere: it reads until the end unless the application stops stepping it.
    Unbounded,
    /// A top-level `LIMIT` of literals: at most this many rows (limit plus offset) of its outer scan.
    Rows(u64),
    /// A `LIMIT` in a subquery, of an expression or a parameter, or text that could not be scanned.
    Unknown,
}

/// One token of SQL text, as far as the bound needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a [u8]),
    Number(&'a [u8]),
    Open,
    Close,
    Comma,
    /// Anything else: an operator, a string, a quoted identifier, a parameter.
    Other,
}

/// The bound that the SQL text `sql` of one statement sets on the rows it reads.
pub fn row_bound(sql: &[u8]) -> RowBound {
    let Some(tokens) = tokenize(sql) else {
        return RowBound::Unknown;
    };
    let mut depth = 0usize;
    let mut limit_at = None;
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Open => depth += 1,
            Token::Close => depth = depth.saturating_sub(1),
            Token::Word(word) if word.eq_ignore_ascii_case(b"LIMIT") => {
                if depth > 0 || limit_at.is_some() {
                    return RowBound::Unknown;
                }
                limit_at = Some(i);
            }
            _ => {}
        }
    }
    match limit_at {
        None => RowBound::Unbounded,
        Some(at) => limit_rows(&tokens[at + 1..]).map_or(RowBound::Unknown, RowBound::Rows),
    }
}

/// The rows that the tokens after `LIMIT` allow: `n`, `n OFFSET m` or `m, n`, of integer literals,
/// and nothing after them but a statement's end.
fn limit_rows(rest: &[Token<'_>]) -> Option<u64> {
    let (first, second) = match rest {
        [Token::Number(n)] => return integer(n),
        [Token::Number(a), Token::Comma, Token::Number(b)] => (a, b),
        [Token::Number(a), Token::Word(w), Token::Number(b)]
            if w.eq_ignore_ascii_case(b"OFFSET") =>
        {
            (a, b)
        }
        _ => return None,
    };
    integer(first)?.checked_add(integer(second)?)
}

/// A decimal integer literal (no sign, fraction, exponent or hexadecimal).
fn integer(digits: &[u8]) -> Option<u64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The tokens of `sql` (a trailing `;` and what follows it dropped), or `None` for an unterminated
/// string, identifier or comment.
fn tokenize(sql: &[u8]) -> Option<Vec<Token<'_>>> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < sql.len() {
        let c = sql[i];
        let rest = &sql[i..];
        i += match c {
            b';' => break,
            _ if c.is_ascii_whitespace() => 1,
            b'-' if rest.starts_with(b"--") => {
                rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
            }
            b'/' if rest.starts_with(b"/*") => find(rest, b"*/", 2)? + 2,
            b'\'' | b'"' | b'`' => {
                tokens.push(Token::Other);
                quoted(rest, c)?
            }
            b'[' => {
                tokens.push(Token::Other);
                find(rest, b"]", 1)? + 1
            }
            b'(' | b')' | b',' => {
                tokens.push(match c {
                    b'(' => Token::Open,
                    b')' => Token::Close,
                    _ => Token::Comma,
                });
                1
            }
            _ if c.is_ascii_digit() => {
                let len = run(rest, |b| b.is_ascii_alphanumeric() || b == b'.');
                tokens.push(Token::Number(&rest[..len]));
                len
            }
            _ if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let len = run(rest, |b| {
                    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
                });
                tokens.push(Token::Word(&rest[..len]));
                len
            }
            _ => {
                tokens.push(Token::Other);
                1
            }
        };
    }
    Some(tokens)
}

/// Length of the quoted token at the start of `text`, quote `q` doubled inside it as an escape.
fn quoted(text: &[u8], q: u8) -> Option<usize> {
    let mut i = 1;
    loop {
        i += text.get(i..)?.iter().position(|&b| b == q)? + 1;
        if text.get(i) != Some(&q) {
            return Some(i);
        }
        i += 1;
    }
}

/// Offset of `needle` in `text` at or after `from`.
fn find(text: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    text.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Length of the run of bytes at the start of `text` that `keep` accepts.
fn run(text: &[u8], keep: impl Fn(u8) -> bool) -> usize {
    text.iter().position(|&b| !keep(b)).unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_without_limit_is_unbounded() {
        let sql = b"SELECT * FROM chars ORDER BY name";
        assert_eq!(row_bound(sql), RowBound::Unbounded);
        assert_eq!(
            row_bound(b"select 'LIMIT 3', \"limit\" -- limit 5\n from t /* LIMIT 2 */;"),
            RowBound::Unbounded
        );
        assert_eq!(
            row_bound(b"SELECT [limit] FROM t WHERE a = 'it''s LIMIT 1'"),
            RowBound::Unbounded
        );
        assert_eq!(row_bound(b"SELECT limited FROM t"), RowBound::Unbounded);
    }

    #[test]
    fn a_top_level_limit_of_literals_bounds_the_rows() {
        assert_eq!(
            row_bound(b"SELECT * FROM t ORDER BY a LIMIT 1000"),
            RowBound::Rows(1000)
        );
        assert_eq!(
            row_bound(b"select * from t order by a desc limit 20;"),
            RowBound::Rows(20)
        );
        assert_eq!(
            row_bound(b"SELECT * FROM t LIMIT 200 OFFSET 50"),
            RowBound::Rows(250)
        );
        assert_eq!(
            row_bound(b"SELECT * FROM t LIMIT 50, 200"),
            RowBound::Rows(250)
        );
    }

    #[test]
    fn any_other_limit_is_unknown() {
        assert_eq!(row_bound(b"SELECT * FROM t LIMIT ?"), RowBound::Unknown);
        assert_eq!(
            row_bound(b"SELECT * FROM t LIMIT 10 * 2"),
            RowBound::Unknown
        );
        assert_eq!(row_bound(b"SELECT * FROM t LIMIT 0x10"), RowBound::Unknown);
        assert_eq!(
            row_bound(b"SELECT * FROM (SELECT a FROM t LIMIT 5) ORDER BY a"),
            RowBound::Unknown
        );
        assert_eq!(row_bound(b"SELECT 'unterminated FROM t"), RowBound::Unknown);
        assert_eq!(row_bound(b"SELECT a FROM t /* open"), RowBound::Unknown);
    }
}
