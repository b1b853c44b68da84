// Reads its input in reads of a fixed 8 KiB array, taking each read for one message, and
// plays the first legal move. It checks a message is whole JSON before using it, as
// serde_json::from_str(..).unwrap() would: a move_request with its legal moves is longer
// than 8 KiB, so the first read holds part of it and the bot panics (exit status 101).
use std::io::{Read, Write};

// Whether text is one whole JSON object (its brackets balance, outside strings).
fn whole(text: &str) -> Result<(), String> {
    let (mut depth, mut in_string, mut escaped) = (0i32, false, false);
    for c in text.chars() {
        if in_string {
            if escaped { escaped = false } else if c == '\\' { escaped = true } else if c == '"' { in_string = false }
        } else if c == '"' { in_string = true } else if c == '{' || c == '[' { depth += 1 } else if c == '}' || c == ']' { depth -= 1 }
    }
    if depth == 0 && !in_string { Ok(()) } else { Err(format!("EOF while parsing ({} bytes)", text.len())) }
}

fn first_move(text: &str) -> &str {
    let start = text.find("\"legal_moves\":[").unwrap() + 15;
    let end = start + text[start..].find('}').unwrap() + 1;
    &text[start..end]
}

fn seq(text: &str) -> u64 {
    let start = text.find("\"seq\":").unwrap() + 6;
    text[start..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

fn main() {
    let mut out = std::io::stdout();
    writeln!(out, "{{\"type\":\"hello\",\"name\":\"fixed-array\",\"version\":\"1\",\"protocol\":1,\
                   \"capabilities\":{{\"legal_moves\":true}}}}").unwrap();
    out.flush().unwrap();
    let mut stdin = std::io::stdin();
    let mut buf = [0u8; 8192];
    loop {
        let n = stdin.read(&mut buf).unwrap();
        if n == 0 { break; }
        let text = std::str::from_utf8(&buf[..n]).unwrap().trim_end();
        whole(text).unwrap();
        if text.contains("\"type\":\"shutdown\"") { break; }
        if text.contains("\"type\":\"move_request\"") {
            writeln!(out, "{{\"type\":\"move\",\"seq\":{},\"move\":{}}}", seq(text), first_move(text)).unwrap();
            out.flush().unwrap();
        }
    }
}
