//! STAMP's optional extensions (RFC 8972): TLVs after the base packet,
//! each `Flags (1) | Type (1) | Length (2) | Value (Length)`. sonde reads
//! and writes one of them, the Class of Service TLV (type 4, RFC 8972
//! §4.4): the sender asks for the DSCP of the reflected packet (DSCP1),
//! and the reflector says the DSCP and ECN the test packet arrived with
//! (DSCP2, ECN), so that a remark on either way of the path shows.
//!
//! ```text
//!  0                   1                   2                   3
//! |   DSCP1   |   DSCP2   |ECN| RP|            Reserved           |
//! ```
//!
//! Flags (§4): a sender sends each TLV with U set; a reflector clears U,
//! M and I of the TLVs it knows and processed, leaves U set on those it
//! does not know, and sets M on a Class of Service TLV of the wrong
//! length. Bytes that do not read as TLVs end to end (a length that runs
//! past the packet, stray bytes after the last one) are an RFC 8762
//! sender's padding, not TLVs: they come back exactly as they went.
//! So a reply whose TLV still has U came from a reflector that did not
//! process it: one that knows RFC 8972 but not the TLV, or one of RFC
//! 8762 alone, which echoes what follows the base packet unchanged.
//! Bytes of type 0 and length 0 are what RFC 8762's zero padding reads
//! as: they are left alone, so plain padding comes back as it went.

/// The TLV flags (RFC 8972 §4): Unrecognized, Malformed, Integrity
/// failed; the rest of the octet is left as it came.
pub const FLAG_U: u8 = 0x80;
pub const FLAG_M: u8 = 0x40;
pub const FLAG_I: u8 = 0x20;
const FLAGS_UMI: u8 = FLAG_U | FLAG_M | FLAG_I;

/// Type of the Extra Padding TLV (RFC 8972 §4.1).
pub const TYPE_PADDING: u8 = 1;
/// Type of the Class of Service TLV (RFC 8972 §4.4).
pub const TYPE_COS: u8 = 4;
/// A TLV's header: flags, type, length.
pub const HEADER_LEN: usize = 4;
/// The Class of Service TLV's value.
pub const COS_LEN: usize = 4;

/// The Class of Service TLV's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassOfService {
    /// The DSCP the sender asks the reflector to send its reply with.
    pub dscp1: u8,
    /// The DSCP the test packet arrived with at the reflector (0 from a
    /// sender).
    pub dscp2: u8,
    /// The ECN bits the test packet arrived with (0 from a sender).
    pub ecn: u8,
    /// Reverse Path (2 bits): 0 from a sender; a reflector whose policy
    /// did not let it use DSCP1 sets 1 (RFC 8972 §4.4).
    pub rp: u8,
}

impl ClassOfService {
    /// The whole TLV (header and value), as a sender writes it: U set,
    /// DSCP1 asked, every other field 0.
    pub fn request(dscp1: u8) -> [u8; HEADER_LEN + COS_LEN] {
        let mut tlv = [0u8; HEADER_LEN + COS_LEN];
        tlv[0] = FLAG_U;
        tlv[1] = TYPE_COS;
        tlv[2..4].copy_from_slice(&(COS_LEN as u16).to_be_bytes());
        ClassOfService {
            dscp1,
            ..ClassOfService::default()
        }
        .write(&mut tlv[HEADER_LEN..]);
        tlv
    }

    /// Reads the value (4 bytes).
    pub fn read(value: &[u8]) -> Option<Self> {
        let v: [u8; COS_LEN] = value.get(..COS_LEN)?.try_into().ok()?;
        Some(Self {
            dscp1: v[0] >> 2,
            dscp2: ((v[0] & 0x03) << 4) | (v[1] >> 4),
            ecn: (v[1] >> 2) & 0x03,
            rp: v[1] & 0x03,
        })
    }

    /// Writes the value into the first 4 bytes of `value` (the reserved
    /// half zeroed).
    pub fn write(&self, value: &mut [u8]) {
        let (d1, d2) = (self.dscp1 & 0x3f, self.dscp2 & 0x3f);
        value[0] = (d1 << 2) | (d2 >> 4);
        value[1] = ((d2 & 0x0f) << 4) | ((self.ecn & 0x03) << 2) | (self.rp & 0x03);
        value[2] = 0;
        value[3] = 0;
    }
}

/// Where one TLV sits: its first byte (the flags), its type, and the end
/// of its value (which may lie past the bytes given).
struct Span {
    at: usize,
    kind: u8,
    end: usize,
}

impl Span {
    fn value_len(&self) -> usize {
        self.end - self.at - HEADER_LEN
    }
}

/// The TLV whose header starts at `at`, if a header fits there.
fn span_at(tlvs: &[u8], at: usize) -> Option<Span> {
    let header = tlvs.get(at..at.checked_add(HEADER_LEN)?)?;
    let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    Some(Span {
        at,
        kind: header[1],
        end: at + HEADER_LEN + len,
    })
}

/// The TLVs of `tlvs` one after the other, as far as a header fits.
fn spans(tlvs: &[u8]) -> impl Iterator<Item = Span> + '_ {
    std::iter::successors(span_at(tlvs, 0), move |s| span_at(tlvs, s.end))
}

/// Whether `tlvs` reads as TLVs end to end: each one's value within the
/// bytes, and nothing after the last but fewer zeros than a header.
fn well_formed(tlvs: &[u8]) -> bool {
    let mut end = 0;
    for span in spans(tlvs) {
        if span.end > tlvs.len() {
            return false;
        }
        end = span.end;
    }
    tlvs[end..].iter().all(|b| *b == 0)
}

/// The Class of Service TLV among `tlvs` (the bytes after the base
/// packet), if there is one of the right length, and whether the
/// reflector processed it (its U flag cleared).
pub fn find_cos(tlvs: &[u8]) -> Option<(ClassOfService, bool)> {
    let span = spans(tlvs)
        .take_while(|s| s.end <= tlvs.len())
        .find(|s| s.kind == TYPE_COS && s.value_len() == COS_LEN)?;
    let cos = ClassOfService::read(&tlvs[span.at + HEADER_LEN..span.end])?;
    Some((cos, tlvs[span.at] & FLAG_U == 0))
}

/// A reflector's work on the TLVs of a reply (a copy of the request's
/// bytes after the base packet), when they read as TLVs end to end (else
/// they are padding and stay as they are): fills each Class of Service
/// TLV with `received_tos` (the test packet's TOS / traffic class) and
/// clears its U, M and I; leaves U on the types it does not know; marks
/// M a Class of Service TLV of the wrong length. Returns the DSCP the
/// reply is asked to carry, if a Class of Service TLV asked for one.
pub fn reflect(tlvs: &mut [u8], received_tos: u8) -> Option<u8> {
    if !well_formed(tlvs) {
        return None;
    }
    let mut asked = None;
    // Walked by position, not by `spans`, as the bytes change on the way
    // (no allocation per reflected packet).
    let mut next = span_at(tlvs, 0);
    while let Some(span) = next {
        next = span_at(tlvs, span.end);
        let flags = |f: u8| (tlvs[span.at] & !FLAGS_UMI) | f;
        match span.kind {
            // Zero padding (RFC 8762): left as it came.
            0 => {}
            TYPE_PADDING => tlvs[span.at] = flags(0),
            TYPE_COS if span.value_len() == COS_LEN => {
                tlvs[span.at] = flags(0);
                let value = &mut tlvs[span.at + HEADER_LEN..span.end];
                if let Some(mut cos) = ClassOfService::read(value) {
                    cos.dscp2 = received_tos >> 2;
                    cos.ecn = received_tos & 0x03;
                    cos.rp = 0;
                    cos.write(value);
                    asked = Some(cos.dscp1);
                }
            }
            TYPE_COS => tlvs[span.at] = flags(FLAG_M),
            _ => tlvs[span.at] = flags(FLAG_U),
        }
    }
    asked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_sit_where_rfc_8972_puts_them() {
        // DSCP1 = EF (46), DSCP2 = AF41 (34), ECN = ECT(0) (2), RP = 1:
        // 101110 100010 10 01 then 16 reserved bits.
        let cos = ClassOfService {
            dscp1: 46,
            dscp2: 34,
            ecn: 2,
            rp: 1,
        };
        let mut v = [0xffu8; 4];
        cos.write(&mut v);
        assert_eq!(v, [0b1011_1010, 0b0010_1001, 0, 0]);
        assert_eq!(ClassOfService::read(&v), Some(cos));
        assert_eq!(
            ClassOfService::request(46),
            [FLAG_U, 4, 0, 4, 0b1011_1000, 0, 0, 0]
        );
    }

    #[test]
    fn the_reflector_fills_what_arrived_and_flags_what_it_does_not_know() {
        let mut tlvs = Vec::new();
        tlvs.extend_from_slice(&[FLAG_U, TYPE_PADDING, 0, 2, 7, 7]);
        tlvs.extend_from_slice(&ClassOfService::request(46));
        tlvs.extend_from_slice(&[0, 200, 0, 1, 9]);
        // Arrived as AF11 (10) with CE (3).
        let asked = reflect(&mut tlvs, (10 << 2) | 3);
        assert_eq!(asked, Some(46));
        assert_eq!(
            &tlvs[..6],
            &[0, TYPE_PADDING, 0, 2, 7, 7],
            "padding as it came"
        );
        assert_eq!(
            find_cos(&tlvs),
            Some((
                ClassOfService {
                    dscp1: 46,
                    dscp2: 10,
                    ecn: 3,
                    rp: 0
                },
                true
            ))
        );
        assert_eq!(
            find_cos(&ClassOfService::request(46)).map(|(_, processed)| processed),
            Some(false),
            "as a sender sends it: U set"
        );
        assert_eq!(tlvs[14], FLAG_U, "type 200 is not known");
        assert_eq!(tlvs[18], 9, "its value is left");
    }

    #[test]
    fn plain_padding_and_broken_tlvs_are_handled() {
        let mut zeros = [0u8; 27];
        assert_eq!(reflect(&mut zeros, 0xb8), None);
        assert_eq!(zeros, [0u8; 27]);
        // A length that runs past the packet: not TLVs but padding, left
        // exactly as it came; so are bytes that are no TLV at all.
        let mut short = [0, TYPE_COS, 0, 40, 1, 2];
        assert_eq!(reflect(&mut short, 0), None);
        assert_eq!(short, [0, TYPE_COS, 0, 40, 1, 2]);
        assert_eq!(find_cos(&short), None);
        let mut counting: Vec<u8> = (44..100).collect();
        let copy = counting.clone();
        assert_eq!(reflect(&mut counting, 0xb8), None);
        assert_eq!(counting, copy);
        let mut stray = ClassOfService::request(46).to_vec();
        stray.push(7);
        assert_eq!(reflect(&mut stray, 0xb8), None, "a stray byte after it");
        // A Class of Service TLV of the wrong length is malformed.
        let mut wrong = [0, TYPE_COS, 0, 2, 1, 2];
        assert_eq!(reflect(&mut wrong, 0), None);
        assert_eq!(wrong[0], FLAG_M);
        // Fewer bytes than a header: nothing to do.
        let mut tiny = [0, 4, 0];
        assert_eq!(reflect(&mut tiny, 0), None);
    }
}
