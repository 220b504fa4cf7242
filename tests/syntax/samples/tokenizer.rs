//! A tokenizer for a small arithmetic language.
use std::collections::HashMap;
use std::fmt;

const MAX_DEPTH: usize = 64;

/// One lexical token.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Number(f64),
    Ident(String),
    Op(char),
}

pub struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    keywords: HashMap<&'static str, Token>,
}

impl<'a> Lexer<'a> {
    /// Creates a lexer over `source`.
    pub fn new(source: &'a str) -> Self {
        Lexer { chars: source.chars().peekable(), keywords: HashMap::new() }
    }

    fn number(&mut self, first: char) -> Token {
        let mut text = String::from(first);
        while let Some(&c) = self.chars.peek() {
            if !(c.is_ascii_digit() || c == '.') {
                break;
            }
            text.push(c);
            self.chars.next();
        }
        Token::Number(text.parse().unwrap_or(0.0))
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        // Skip whitespace between tokens.
        let c = self.chars.find(|c| !c.is_whitespace())?;
        match c {
            '0'..='9' => Some(self.number(c)),
            '+' | '-' | '*' | '/' => Some(Token::Op(c)),
            _ => Some(Token::Ident(c.to_string())),
        }
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Number(n) => write!(f, "{n}"),
            Token::Ident(s) => write!(f, "{s}"),
            Token::Op(c) => write!(f, "{c}"),
        }
    }
}

pub fn tokenize(source: &str) -> Vec<Token> {
    Lexer::new(source).collect()
}
