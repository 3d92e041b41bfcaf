//! The emulator's hops read from a direction's keys, against known
//! inputs: an MPLS hop (`mpls`, also as `lab set` writes it) and a tunnel
//! (`tunnel`, with or without a cipher).

use super::tests::read;
use super::*;
use ProfileError as P;

#[test]
fn an_mpls_hop_reads_its_labels_and_addresses_and_names_what_is_wrong() {
    let p =
        read("mpls = { labels = [16005, 299776], address = [\"2001:db8:ff::1\", \"10.255.0.1\"] }")
            .unwrap();
    let lsr = p.mpls.clone().unwrap();
    assert_eq!(lsr.labels, [16005, 299_776]);
    assert_eq!(lsr.v6, Some("2001:db8:ff::1".parse().unwrap()));
    assert_eq!(lsr.v4, Some("10.255.0.1".parse().unwrap()));
    assert_eq!(p.impairment().mpls, Some(lsr), "the emulator gets it");
    assert!(p.emulated());
    // One address alone, as a string; none at all: a silent hop.
    let one = read("mpls = { labels = [3], address = \"10.255.0.1\" }").unwrap();
    assert_eq!(one.mpls.unwrap().v6, None);
    assert!(read("mpls = { labels = [3] }")
        .unwrap()
        .mpls
        .unwrap()
        .addresses()
        .is_empty());
    let err = |text: &str| read(text).unwrap_err();
    assert!(matches!(
        err("mpls = { address = \"10.0.0.1\" }"),
        P::MissingKey { key, .. } if key == "mpls.labels"
    ));
    assert!(matches!(
        err("mpls = { labels = [] }"),
        P::LabelCount { count: 0, .. }
    ));
    assert!(matches!(
        err("mpls = { labels = [1, 2, 3, 4, 5] }"),
        P::LabelCount { count: 5, .. }
    ));
    assert!(matches!(
        err("mpls = { labels = [16, 1048576] }"),
        P::BadLabel { key, value } if key == "mpls.labels[2]" && value == "1048576"
    ));
    assert!(matches!(
        err("mpls = { labels = [-1] }"),
        P::BadLabel { key, .. } if key == "mpls.labels[1]"
    ));
    assert!(matches!(
        err("mpls = { labels = [16], address = [\"10.0.0.1\", \"ten\"] }"),
        P::BadAddress { key, value } if key == "mpls.address[2]" && value == "ten"
    ));
    assert!(matches!(
        err("mpls = { labels = [16], address = [\"10.0.0.1\", \"10.0.0.2\"] }"),
        P::TwoAddressesOfAFamily { family: 4, .. }
    ));
    assert!(matches!(
        err("mpls = { labels = [16], ttl = 1 }"),
        P::UnknownKey { key, .. } if key == "mpls.ttl"
    ));
    assert!(matches!(
        err("mpls = 16005"),
        P::WrongType { key, .. } if key == "mpls"
    ));
    assert_eq!(
        err("mpls = { labels = [16, 1048576] }").to_string(),
        "mpls.labels[2]: '1048576' is not an MPLS label (a whole number from 0 to 1048575)"
    );
}

#[test]
fn lab_set_takes_an_mpls_hop_as_the_key_writes_it_or_off() {
    assert_eq!(mpls_setting("off").unwrap(), None);
    let lsr = mpls_setting("{ labels = [16005], address = [\"2001:db8::fe\"] }")
        .unwrap()
        .unwrap();
    assert_eq!((lsr.labels, lsr.v4), (vec![16005], None));
    assert!(matches!(
        mpls_setting("16005").unwrap_err(),
        P::WrongType { key, .. } if key == "mpls"
    ));
    assert!(matches!(
        mpls_setting("{ labels = [16005").unwrap_err(),
        P::WrongType { key, .. } if key == "mpls"
    ));
    assert!(matches!(
        mpls_setting("{ labels = [16005] }\nrate = 1").unwrap_err(),
        P::WrongType { key, .. } if key == "mpls"
    ));
}

#[test]
fn a_tunnel_reads_its_overhead_mtu_and_entrance_and_names_what_is_wrong() {
    let p = read("tunnel = { overhead = 60, mtu = 1400, address = [\"2001:db8::fd\"] }").unwrap();
    let t = p.tunnel.clone().unwrap();
    assert_eq!((t.overhead, t.mtu, t.v4), (60, Some(1400), None));
    assert_eq!(p.impairment().tunnel, Some(t), "the emulator gets it");
    let plain = read("tunnel = { overhead = 40 }").unwrap().tunnel.unwrap();
    assert_eq!((plain.mtu, plain.addresses().len()), (None, 0));
    let err = |text: &str| read(text).unwrap_err();
    assert!(matches!(
        err("tunnel = { mtu = 1400 }"),
        P::MissingKey { key, .. } if key == "tunnel.overhead"
    ));
    assert!(matches!(
        err("tunnel = { overhead = 2000 }"),
        P::TunnelOverhead { overhead: 2000, .. }
    ));
    assert!(matches!(
        err("tunnel = { overhead = 40, mtu = 1000 }"),
        P::TunnelMtuTooSmall { key, mtu: 1000 } if key == "tunnel.mtu"
    ));
    assert!(matches!(
        err("tunnel = { overhead = \"big\" }"),
        P::BadInteger { key, .. } if key == "tunnel.overhead"
    ));
    assert!(matches!(
        err("tunnel = { overhead = 40, address = [\"::1\", \"::2\"] }"),
        P::TwoAddressesOfAFamily { family: 6, .. }
    ));
    assert!(matches!(
        err("tunnel = { overhead = 40, cipher = \"aes\" }"),
        P::BadCipher { key, value, .. } if key == "tunnel.cipher" && value == "aes"
    ));
    assert!(matches!(
        err("tunnel = { overhead = 40, key = 1 }"),
        P::UnknownKey { key, .. } if key == "tunnel.key"
    ));
}

#[test]
fn an_encrypting_tunnel_needs_no_overhead_and_says_its_suite() {
    let p = read("tunnel = { cipher = \"3des-sha1\" }").unwrap();
    let t = p.tunnel.clone().unwrap();
    assert_eq!(
        (t.overhead, t.cipher),
        (0, Some(crate::emulator::Suite::TdesSha1))
    );
    assert_eq!(p.impairment().to_string(), "ESP tunnel 3des-sha1");
    let nat_t = read("tunnel = { overhead = 8, cipher = \"aes128-gcm\" }").unwrap();
    assert_eq!(nat_t.tunnel.unwrap().overhead, 8);
    let e = read("tunnel = { cipher = \"rot13\" }")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tunnel.cipher: 'rot13' is not a cipher suite; use one of des-md5"),
        "{e}"
    );
}
