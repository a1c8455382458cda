use super::*;
use crate::base::codec::wire::*;
use serde::de::{MapAccess, Visitor};
use serde::{ser, Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Ev {
    A { x: i64, name: String },
    B(Inner),
    C,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Inner {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    maybe: Option<u32>,
    list: Vec<f32>,
    kind: Kind,
    pair: (u8, String),
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Plain,
    Wrapped(u64),
    Shaped { a: bool },
}

#[test]
fn values_round_trip() {
    let evs = vec![
        Ev::A {
            x: -5,
            name: "héllo".into(),
        },
        Ev::B(Inner {
            maybe: None,
            list: vec![0.5, -1.25],
            kind: Kind::Wrapped(u64::MAX),
            pair: (7, String::new()),
        }),
        Ev::B(Inner {
            maybe: Some(3),
            list: vec![],
            kind: Kind::Shaped { a: true },
            pair: (0, "x".into()),
        }),
        Ev::C,
        Ev::B(Inner {
            maybe: None,
            list: vec![f32::MIN_POSITIVE],
            kind: Kind::Plain,
            pair: (255, "y".into()),
        }),
    ];
    let bytes = to_bytes(&evs);
    assert_eq!(from_bytes::<Vec<Ev>>(&bytes).unwrap(), evs);
    let mut m = BTreeMap::new();
    m.insert(i64::MIN, Some(vec![1u8, 2]));
    m.insert(0, None);
    assert_eq!(
        from_bytes::<BTreeMap<i64, Option<Vec<u8>>>>(&to_bytes(&m)).unwrap(),
        m
    );
}

#[test]
fn names_are_spelled_once() {
    let evs: Vec<Ev> = (0..100)
        .map(|x| Ev::A {
            x,
            name: String::new(),
        })
        .collect();
    let bytes = to_bytes(&evs);
    let spelled = bytes.windows(4).filter(|w| w == b"name").count();
    assert_eq!(spelled, 1);
}

#[test]
fn json_reads_through_the_decoder_as_serde_json_reads_it() {
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Doc {
        name: String,
        counts: Vec<i64>,
        nested: Vec<Vec<f32>>,
        flag: Option<bool>,
    }
    let counts: Vec<String> = (-150..150).map(|i| i.to_string()).collect();
    let text = format!(
        r#"{{"nested": [[1.5, 2], []], "name": "a \"q\" é", "counts": [{}], "flag": null}}"#,
        counts.join(",")
    );
    let ours: Doc = from_json(&text).expect("reads");
    assert_eq!(ours.counts.len(), 300);
    assert_eq!(ours.name, "a \"q\" é");
    assert_eq!(ours.nested, vec![vec![1.5, 2.0], vec![]]);
    assert_eq!(ours.flag, None);
    let repeated = from_json::<Doc>(r#"{"name": "a", "name": "b", "counts": [], "nested": []}"#)
        .expect_err("a repeated field");
    assert!(
        repeated.to_string().contains("duplicate field"),
        "{repeated}"
    );
    let syntax = from_json::<Doc>("{\"name\": }").expect_err("bad JSON");
    assert!(syntax.to_string().contains("line 1"), "{syntax}");
    let trailing = from_json::<Vec<u8>>("[1] x").expect_err("trailing text");
    assert!(trailing.to_string().contains("trailing"), "{trailing}");
}

#[test]
fn tags_are_names_and_names_used_before_take_one_byte() {
    let evs = vec![Ev::C, Ev::C];
    let bytes = to_bytes_tagged(&evs, &["type"]);
    let mut want = vec![SEQ, 2, MAP, 1, NAME_NEW, 4];
    want.extend_from_slice(b"type");
    want.extend_from_slice(&[NAME_NEW, 1, b'c', MAP, 1, NAME_SHORT, NAME_SHORT + 1]);
    assert_eq!(bytes, want);
    assert_eq!(from_bytes::<Vec<Ev>>(&bytes).unwrap(), evs);
    // As entries of version 3 wrote them: names used before as
    // `NAME_REF` and a LEB128 id, the tag as a string each time.
    let mut old = vec![SEQ, 2, MAP, 1, NAME_NEW, 4];
    old.extend_from_slice(b"type");
    old.extend_from_slice(&[STR, 1, b'c', MAP, 1, NAME_REF, 0, STR, 1, b'c']);
    assert_eq!(from_bytes::<Vec<Ev>>(&old).unwrap(), evs);
}

#[test]
fn names_past_the_first_240_are_referred_to_by_number() {
    // A map with 300 distinct keys as names: a struct's names are
    // `&'static str`, so leak a few for the test.
    #[derive(Debug, PartialEq)]
    struct Many(Vec<u32>);
    impl Serialize for Many {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use ser::SerializeStruct;
            let names: &'static [String] =
                Box::leak((0..300).map(|i| format!("f{i}")).collect::<Box<[_]>>());
            let mut st = s.serialize_struct("Many", 600)?;
            for round in 0..2 {
                for (i, n) in names.iter().enumerate() {
                    let n: &'static str = n.as_str();
                    st.serialize_field(n, &(self.0[i] + round))?;
                }
            }
            st.end()
        }
    }
    let many = Many((0..300).collect());
    let bytes = to_bytes(&many);
    from_bytes::<serde::de::IgnoredAny>(&bytes).unwrap();
    // The second round: 240 one-byte references, then 60 of three bytes
    // (the byte 12 also occurs as a value).
    assert!(bytes.iter().filter(|&&b| b == NAME_REF).count() >= 60);
    let back: Vec<(String, u32)> = {
        let mut dec = Decoder::new(&bytes);
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, u32)>;
            fn expecting(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = a.next_entry::<String, u32>()? {
                    out.push(kv);
                }
                Ok(out)
            }
        }
        de::Deserializer::deserialize_any(&mut dec, Pairs).unwrap()
    };
    assert_eq!(back.len(), 600);
    for (i, (k, v)) in back.iter().enumerate() {
        assert_eq!(k, &format!("f{}", i % 300));
        assert_eq!(*v, (i % 300) as u32 + (i / 300) as u32);
    }
}

#[test]
fn unknown_fields_are_skipped_and_keep_the_names_they_define() {
    #[derive(Serialize)]
    struct Pair {
        zeta: u8,
        eta: String,
    }
    #[derive(Serialize)]
    struct Wide {
        skipped: Vec<Pair>,
        kept: Vec<Pair>,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct Half {
        zeta: u8,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct Narrow {
        kept: Vec<Half>,
    }
    let pair = |zeta| Pair {
        zeta,
        eta: "x".into(),
    };
    // `zeta` and `eta` are spelled inside `skipped` and referred to by
    // number inside `kept`: skipping must still learn them.
    let bytes = to_bytes(&Wide {
        skipped: vec![pair(1)],
        kept: vec![pair(2), pair(3)],
    });
    let narrow: Narrow = from_bytes(&bytes).unwrap();
    assert_eq!(narrow.kept, vec![Half { zeta: 2 }, Half { zeta: 3 }]);
}

#[test]
fn a_value_of_the_wrong_type_is_refused_naming_both_types() {
    let e = from_bytes::<Inner>(&to_bytes("text"))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "invalid type: string \"text\", expected struct Inner");
    let e = from_bytes::<u32>(&to_bytes(&true)).unwrap_err().to_string();
    assert_eq!(e, "invalid type: boolean `true`, expected u32");
    let e = from_bytes::<bool>(&to_bytes(&7u8)).unwrap_err().to_string();
    assert_eq!(e, "invalid type: integer `7`, expected a boolean");
    let e = from_bytes::<Vec<u8>>(&to_bytes(&-2i64))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "invalid type: integer `-2`, expected a sequence");
    let e = from_bytes::<u8>(&to_bytes(&300u32))
        .unwrap_err()
        .to_string();
    assert_eq!(e, "invalid value: integer `300`, expected u8");
    // A float field takes an integer, as serde_json's readers do.
    assert_eq!(from_bytes::<f64>(&to_bytes(&3u8)).unwrap(), 3.0);
    assert_eq!(from_bytes::<f32>(&to_bytes(&-3i8)).unwrap(), -3.0);
}

#[test]
fn damage_is_an_error_never_a_panic() {
    let bytes = to_bytes(&vec![Ev::A {
        x: 1,
        name: "abc".into(),
    }]);
    for cut in 0..bytes.len() {
        assert!(from_bytes::<Vec<Ev>>(&bytes[..cut]).is_err());
    }
    let mut rng = 1u64;
    for _ in 0..2000 {
        let mut b = bytes.clone();
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
        let i = (rng >> 33) as usize % b.len();
        b[i] = (rng >> 20) as u8;
        let _ = from_bytes::<Vec<Ev>>(&b);
    }
    assert!(from_bytes::<Vec<Ev>>(&[SEQ, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
    let deep: Vec<u8> = std::iter::repeat_n([SEQ, 1], 10_000).flatten().collect();
    assert!(from_bytes::<serde::de::IgnoredAny>(&deep).is_err());
}
