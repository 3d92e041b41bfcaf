//! STAMP keys as operators write them: hex digits in a file, spaces and
//! line breaks allowed (`sonde ping --key-file`, `sonde serve
//! --reflector-key-file`).

/// A key file that is not a hex key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("'{found}' at digit {digit} is not hexadecimal")]
    NotHex { found: char, digit: usize },
    #[error("a key is an even number of hex digits, at least 2; found {digits}")]
    BadLength { digits: usize },
}

/// The key bytes of hex `text` (white space ignored).
pub fn parse_hex_key(text: &str) -> Result<Vec<u8>, KeyError> {
    let digits: Vec<u8> = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .enumerate()
        .map(|(i, c)| {
            c.to_digit(16)
                .and_then(|d| u8::try_from(d).ok())
                .ok_or(KeyError::NotHex {
                    found: c,
                    digit: i + 1,
                })
        })
        .collect::<Result<_, _>>()?;
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return Err(KeyError::BadLength {
            digits: digits.len(),
        });
    }
    Ok(digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_with_spaces_and_lines_is_a_key() {
        assert_eq!(
            parse_hex_key("00 ff\n7A\t10\n").unwrap(),
            vec![0x00, 0xff, 0x7a, 0x10]
        );
    }

    #[test]
    fn bad_keys_say_what_is_wrong() {
        assert_eq!(
            parse_hex_key("0g"),
            Err(KeyError::NotHex {
                found: 'g',
                digit: 2
            })
        );
        assert_eq!(parse_hex_key("abc"), Err(KeyError::BadLength { digits: 3 }));
        assert_eq!(parse_hex_key(" \n"), Err(KeyError::BadLength { digits: 0 }));
        let e = parse_hex_key("0é").unwrap_err();
        assert_eq!(
            e,
            KeyError::NotHex {
                found: 'é',
                digit: 2
            }
        );
        assert!(e.to_string().contains("'é' at digit 2"), "{e}");
    }
}
