//! The External Term Format codec through its public API: golden encodings
//! from Erlang/OTP, the serde mapping, the raw-term hook, and property and
//! fuzz-style tests (seeded, so failures reproduce).

use std::collections::HashMap;

use otter::dist::etf::{
    self, Atom, BigInt, DecodeError, EncodeError, ExternalPid, ExternalPort, ExternalRef,
    MAX_DEPTH, Term,
};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------
// A small seeded generator.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn usize(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

fn random_atom(rng: &mut Rng) -> Atom {
    const CHARS: &[char] = &[
        'a', 'b', 'z', 'O', 'K', '_', '@', ' ', '\'', 'é', '€', '😀', '1',
    ];
    let n = if rng.chance(50) { 255 } else { rng.usize(12) };
    let s: String = (0..n).map(|_| CHARS[rng.usize(CHARS.len())]).collect();
    Atom::new(&s)
}

fn random_int(rng: &mut Rng) -> i64 {
    match rng.below(5) {
        0 => rng.below(256) as i64,
        1 => rng.next() as i32 as i64,
        2 => rng.next() as i64,
        3 => -(rng.below(1000) as i64),
        _ => [i64::MIN, i64::MAX, 0, -1, 255, 256, i32::MAX as i64 + 1][rng.usize(7)],
    }
}

fn random_big(rng: &mut Rng) -> BigInt {
    // At least 9 bytes with a non-zero top byte: never fits i64.
    let span = if rng.chance(20) { 300 } else { 20 };
    let n = 9 + rng.usize(span);
    let mut magnitude: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    *magnitude.last_mut().unwrap() |= 1;
    BigInt {
        negative: rng.chance(2),
        magnitude,
    }
}

fn random_leaf(rng: &mut Rng) -> Term {
    match rng.below(13) {
        0 | 1 => Term::Atom(random_atom(rng)),
        2 | 3 => Term::Int(random_int(rng)),
        4 => Term::BigInt(random_big(rng)),
        5 => Term::Float(f64::from_bits(rng.next())),
        6 => Term::Binary((0..rng.usize(20)).map(|_| rng.next() as u8).collect()),
        7 => Term::BitBinary {
            bytes: (0..1 + rng.usize(4)).map(|_| rng.next() as u8).collect(),
            bits: 1 + rng.below(8) as u8,
        },
        8 => Term::Pid(ExternalPid {
            node: random_atom(rng),
            id: rng.next() as u32,
            serial: rng.next() as u32,
            creation: rng.next() as u32,
        }),
        9 => Term::Ref(ExternalRef {
            node: random_atom(rng),
            creation: rng.next() as u32,
            id: (0..1 + rng.usize(5)).map(|_| rng.next() as u32).collect(),
        }),
        10 => Term::Port(ExternalPort {
            node: random_atom(rng),
            id: if rng.chance(2) {
                rng.next() as u32 as u64
            } else {
                rng.next()
            },
            creation: rng.next() as u32,
        }),
        11 => Term::Fun(if rng.chance(2) {
            FUN_LOCAL[1..].to_vec()
        } else {
            FUN_EXPORT[1..].to_vec()
        }),
        _ => Term::List(
            (0..rng.usize(6))
                .map(|_| Term::Int(rng.below(256) as i64))
                .collect(),
        ),
    }
}

fn random_term(rng: &mut Rng, depth: usize) -> Term {
    if depth == 0 || rng.chance(3) {
        return random_leaf(rng);
    }
    let n = rng.usize(5);
    let kids = |rng: &mut Rng, n: usize| -> Vec<Term> {
        (0..n).map(|_| random_term(rng, depth - 1)).collect()
    };
    match rng.below(4) {
        0 => Term::List(kids(rng, n)),
        1 => {
            let tail = match random_leaf(rng) {
                Term::List(_) => Term::atom("tail"),
                t => t,
            };
            Term::ImproperList(kids(rng, n + 1), Box::new(tail))
        }
        2 => Term::Tuple(kids(rng, n)),
        _ => Term::Map(
            (0..n)
                .map(|_| (random_term(rng, depth - 1), random_term(rng, depth - 1)))
                .collect(),
        ),
    }
}

fn enc(t: &Term) -> Vec<u8> {
    let mut v = Vec::new();
    t.encode(&mut v);
    v
}

// ---------------------------------------------------------------------------
// Golden encodings, made by Erlang/OTP 25 `term_to_binary(T, [{minor_version, 2}])`
// (MIXED_OTP25, ATOM_LATIN1_OLD: default options; FLOAT_OLD: minor_version 0).

const MIXED_OTP25: &[u8] = &[
    131, 104, 5, 100, 0, 2, 111, 107, 107, 0, 3, 1, 2, 3, 109, 0, 0, 0, 2, 104, 105, 116, 0, 0, 0,
    1, 100, 0, 1, 97, 70, 63, 248, 0, 0, 0, 0, 0, 0, 110, 8, 1, 210, 10, 31, 235, 140, 169, 84,
    171,
];
const INT_0: &[u8] = &[131, 97, 0];
const INT_255: &[u8] = &[131, 97, 255];
const INT_256: &[u8] = &[131, 98, 0, 0, 1, 0];
const INT_M1: &[u8] = &[131, 98, 255, 255, 255, 255];
const INT_I32MAX: &[u8] = &[131, 98, 127, 255, 255, 255];
const INT_I32MAX1: &[u8] = &[131, 110, 4, 0, 0, 0, 0, 128];
const INT_I32MIN: &[u8] = &[131, 98, 128, 0, 0, 0];
const INT_I32MIN1: &[u8] = &[131, 110, 4, 1, 1, 0, 0, 128];
const INT_2P64: &[u8] = &[131, 110, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const INT_M2P100: &[u8] = &[131, 110, 13, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16];
const INT_I64MIN: &[u8] = &[131, 110, 8, 1, 0, 0, 0, 0, 0, 0, 0, 128];
const INT_U64MAX: &[u8] = &[131, 110, 8, 0, 255, 255, 255, 255, 255, 255, 255, 255];
const INT_2P3000: &[u8] = &[
    131, 111, 0, 0, 1, 120, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1,
];
const ATOM_OK: &[u8] = &[131, 119, 2, 111, 107];
const ATOM_EXIT: &[u8] = &[131, 119, 4, 69, 88, 73, 84];
const ATOM_SPACE: &[u8] = &[
    131, 119, 11, 104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100,
];
const ATOM_UNICODE: &[u8] = &[
    131, 119, 10, 104, 195, 169, 108, 108, 195, 182, 226, 130, 172,
];
const ATOM_LATIN1_OLD: &[u8] = &[131, 100, 0, 2, 104, 233];
const FLOAT_1_5: &[u8] = &[131, 70, 63, 248, 0, 0, 0, 0, 0, 0];
const FLOAT_PI: &[u8] = &[131, 70, 64, 9, 33, 251, 84, 68, 45, 24];
const FLOAT_NEG: &[u8] = &[131, 70, 129, 165, 110, 31, 194, 248, 243, 89];
const FLOAT_OLD: &[u8] = &[
    131, 99, 49, 46, 53, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48,
    48, 101, 43, 48, 48, 0, 0, 0, 0, 0,
];
const BIN_EMPTY: &[u8] = &[131, 109, 0, 0, 0, 0];
const BIN_HELLO: &[u8] = &[131, 109, 0, 0, 0, 5, 104, 101, 108, 108, 111];
const BIN_BYTES: &[u8] = &[131, 109, 0, 0, 0, 3, 0, 1, 255];
const NIL: &[u8] = &[131, 106];
const STRING_123: &[u8] = &[131, 107, 0, 3, 1, 2, 3];
const LIST_BIG: &[u8] = &[
    131, 108, 0, 0, 0, 2, 98, 0, 0, 3, 232, 98, 0, 0, 7, 208, 106,
];
const LIST_MIXED: &[u8] = &[
    131, 108, 0, 0, 0, 3, 119, 1, 97, 97, 1, 109, 0, 0, 0, 1, 98, 106,
];
const IMPROPER: &[u8] = &[131, 108, 0, 0, 0, 1, 119, 1, 97, 119, 1, 98];
const IMPROPER2: &[u8] = &[131, 108, 0, 0, 0, 2, 97, 1, 97, 2, 97, 3];
const TUPLE_EMPTY: &[u8] = &[131, 104, 0];
const TUPLE_1: &[u8] = &[131, 104, 1, 119, 1, 97];
const TUPLE_OK1: &[u8] = &[131, 104, 2, 119, 2, 111, 107, 97, 1];
const MAP_1: &[u8] = &[131, 116, 0, 0, 0, 1, 119, 1, 97, 97, 1];
const MAP_EMPTY: &[u8] = &[131, 116, 0, 0, 0, 0];
const MAP_2: &[u8] = &[
    131, 116, 0, 0, 0, 2, 119, 1, 97, 97, 1, 119, 1, 98, 109, 0, 0, 0, 1, 120,
];
const BITS_3: &[u8] = &[131, 77, 0, 0, 0, 1, 3, 160];
const BITS_11: &[u8] = &[131, 77, 0, 0, 0, 2, 3, 255, 224];
const PID: &[u8] = &[
    131, 88, 119, 13, 110, 111, 110, 111, 100, 101, 64, 110, 111, 104, 111, 115, 116, 0, 0, 0, 80,
    0, 0, 0, 0, 0, 0, 0, 0,
];
const REF: &[u8] = &[
    131, 90, 0, 3, 119, 13, 110, 111, 110, 111, 100, 101, 64, 110, 111, 104, 111, 115, 116, 0, 0,
    0, 0, 0, 2, 41, 88, 101, 52, 0, 1, 248, 228, 249, 173,
];
const PORT: &[u8] = &[
    131, 89, 119, 13, 110, 111, 110, 111, 100, 101, 64, 110, 111, 104, 111, 115, 116, 0, 0, 0, 0,
    0, 0, 0, 0,
];
const FUN_LOCAL: &[u8] = &[
    131, 112, 0, 0, 0, 72, 1, 230, 226, 46, 101, 160, 128, 1, 55, 150, 187, 110, 159, 75, 137, 120,
    11, 0, 0, 0, 0, 0, 0, 0, 0, 119, 6, 101, 116, 102, 103, 101, 110, 97, 0, 98, 7, 55, 17, 115,
    88, 119, 13, 110, 111, 110, 111, 100, 101, 64, 110, 111, 104, 111, 115, 116, 0, 0, 0, 9, 0, 0,
    0, 0, 0, 0, 0, 0,
];
const FUN_EXPORT: &[u8] = &[
    131, 113, 119, 5, 108, 105, 115, 116, 115, 119, 3, 109, 97, 112, 97, 2,
];
const LARGE_TUPLE: &[u8] = &[
    131, 105, 0, 0, 1, 0, 97, 1, 97, 2, 97, 3, 97, 4, 97, 5, 97, 6, 97, 7, 97, 8, 97, 9, 97, 10,
    97, 11, 97, 12, 97, 13, 97, 14, 97, 15, 97, 16, 97, 17, 97, 18, 97, 19, 97, 20, 97, 21, 97, 22,
    97, 23, 97, 24, 97, 25, 97, 26, 97, 27, 97, 28, 97, 29, 97, 30, 97, 31, 97, 32, 97, 33, 97, 34,
    97, 35, 97, 36, 97, 37, 97, 38, 97, 39, 97, 40, 97, 41, 97, 42, 97, 43, 97, 44, 97, 45, 97, 46,
    97, 47, 97, 48, 97, 49, 97, 50, 97, 51, 97, 52, 97, 53, 97, 54, 97, 55, 97, 56, 97, 57, 97, 58,
    97, 59, 97, 60, 97, 61, 97, 62, 97, 63, 97, 64, 97, 65, 97, 66, 97, 67, 97, 68, 97, 69, 97, 70,
    97, 71, 97, 72, 97, 73, 97, 74, 97, 75, 97, 76, 97, 77, 97, 78, 97, 79, 97, 80, 97, 81, 97, 82,
    97, 83, 97, 84, 97, 85, 97, 86, 97, 87, 97, 88, 97, 89, 97, 90, 97, 91, 97, 92, 97, 93, 97, 94,
    97, 95, 97, 96, 97, 97, 97, 98, 97, 99, 97, 100, 97, 101, 97, 102, 97, 103, 97, 104, 97, 105,
    97, 106, 97, 107, 97, 108, 97, 109, 97, 110, 97, 111, 97, 112, 97, 113, 97, 114, 97, 115, 97,
    116, 97, 117, 97, 118, 97, 119, 97, 120, 97, 121, 97, 122, 97, 123, 97, 124, 97, 125, 97, 126,
    97, 127, 97, 128, 97, 129, 97, 130, 97, 131, 97, 132, 97, 133, 97, 134, 97, 135, 97, 136, 97,
    137, 97, 138, 97, 139, 97, 140, 97, 141, 97, 142, 97, 143, 97, 144, 97, 145, 97, 146, 97, 147,
    97, 148, 97, 149, 97, 150, 97, 151, 97, 152, 97, 153, 97, 154, 97, 155, 97, 156, 97, 157, 97,
    158, 97, 159, 97, 160, 97, 161, 97, 162, 97, 163, 97, 164, 97, 165, 97, 166, 97, 167, 97, 168,
    97, 169, 97, 170, 97, 171, 97, 172, 97, 173, 97, 174, 97, 175, 97, 176, 97, 177, 97, 178, 97,
    179, 97, 180, 97, 181, 97, 182, 97, 183, 97, 184, 97, 185, 97, 186, 97, 187, 97, 188, 97, 189,
    97, 190, 97, 191, 97, 192, 97, 193, 97, 194, 97, 195, 97, 196, 97, 197, 97, 198, 97, 199, 97,
    200, 97, 201, 97, 202, 97, 203, 97, 204, 97, 205, 97, 206, 97, 207, 97, 208, 97, 209, 97, 210,
    97, 211, 97, 212, 97, 213, 97, 214, 97, 215, 97, 216, 97, 217, 97, 218, 97, 219, 97, 220, 97,
    221, 97, 222, 97, 223, 97, 224, 97, 225, 97, 226, 97, 227, 97, 228, 97, 229, 97, 230, 97, 231,
    97, 232, 97, 233, 97, 234, 97, 235, 97, 236, 97, 237, 97, 238, 97, 239, 97, 240, 97, 241, 97,
    242, 97, 243, 97, 244, 97, 245, 97, 246, 97, 247, 97, 248, 97, 249, 97, 250, 97, 251, 97, 252,
    97, 253, 97, 254, 97, 255, 98, 0, 0, 1, 0,
];
const UNICODE_STRING: &[u8] = &[
    131, 108, 0, 0, 0, 6, 97, 104, 97, 233, 97, 108, 97, 108, 97, 111, 98, 0, 0, 32, 172, 106,
];
const NESTED: &[u8] = &[
    131, 104, 3, 119, 5, 114, 101, 112, 108, 121, 108, 0, 0, 0, 2, 104, 2, 119, 1, 97, 97, 1, 104,
    2, 119, 1, 98, 108, 0, 0, 0, 2, 119, 1, 120, 119, 1, 121, 106, 106, 116, 0, 0, 0, 1, 109, 0, 0,
    0, 1, 107, 104, 2, 70, 63, 240, 0, 0, 0, 0, 0, 0, 119, 9, 117, 110, 100, 101, 102, 105, 110,
    101, 100,
];
const TRUE: &[u8] = &[131, 119, 4, 116, 114, 117, 101];

fn pid(node: &str, id: u32, serial: u32, creation: u32) -> Term {
    Term::Pid(ExternalPid {
        node: Atom::new(node),
        id,
        serial,
        creation,
    })
}

fn big(v: i128) -> Term {
    match i64::try_from(v) {
        Ok(v) => Term::Int(v),
        Err(_) => Term::BigInt(BigInt::from(v)),
    }
}

fn ints(v: &[i64]) -> Term {
    Term::List(v.iter().map(|&i| Term::Int(i)).collect())
}

#[test]
fn golden_decode_and_encode() {
    let a = Term::atom;
    // (bytes, the term, whether our encoding is byte-for-byte Erlang's)
    let cases: Vec<(&[u8], Term, bool)> = vec![
        (
            MIXED_OTP25,
            Term::tuple(vec![
                a("ok"),
                ints(&[1, 2, 3]),
                Term::from("hi"),
                Term::Map(vec![(a("a"), Term::Float(1.5))]),
                big(-12345678901234567890),
            ]),
            false,
        ),
        (INT_0, Term::Int(0), true),
        (INT_255, Term::Int(255), true),
        (INT_256, Term::Int(256), true),
        (INT_M1, Term::Int(-1), true),
        (INT_I32MAX, Term::Int(2147483647), true),
        (INT_I32MAX1, Term::Int(2147483648), true),
        (INT_I32MIN, Term::Int(-2147483648), true),
        (INT_I32MIN1, Term::Int(-2147483649), true),
        (INT_2P64, big(1 << 64), true),
        (INT_M2P100, big(-(1 << 100)), true),
        (INT_I64MIN, Term::Int(i64::MIN), true),
        (INT_U64MAX, big(u64::MAX as i128), true),
        (
            INT_2P3000,
            Term::BigInt(BigInt {
                negative: false,
                magnitude: {
                    let mut m = vec![0; 376];
                    m[375] = 1;
                    m
                },
            }),
            true,
        ),
        (ATOM_OK, a("ok"), true),
        (ATOM_EXIT, a("EXIT"), true),
        (ATOM_SPACE, a("hello world"), true),
        (ATOM_UNICODE, a("héllö€"), true),
        (ATOM_LATIN1_OLD, a("hé"), false),
        (FLOAT_1_5, Term::Float(1.5), true),
        (FLOAT_PI, Term::Float(std::f64::consts::PI), true),
        (FLOAT_NEG, Term::Float(-1.0e-300), true),
        (FLOAT_OLD, Term::Float(1.5), false),
        (BIN_EMPTY, Term::binary(vec![]), true),
        (BIN_HELLO, Term::from("hello"), true),
        (BIN_BYTES, Term::binary(vec![0, 1, 255]), true),
        (NIL, Term::List(vec![]), true),
        (STRING_123, ints(&[1, 2, 3]), true),
        (LIST_BIG, ints(&[1000, 2000]), true),
        (
            LIST_MIXED,
            Term::List(vec![a("a"), Term::Int(1), Term::from("b")]),
            true,
        ),
        (
            IMPROPER,
            Term::ImproperList(vec![a("a")], Box::new(a("b"))),
            true,
        ),
        (
            IMPROPER2,
            Term::ImproperList(vec![Term::Int(1), Term::Int(2)], Box::new(Term::Int(3))),
            true,
        ),
        (TUPLE_EMPTY, Term::tuple(vec![]), true),
        (TUPLE_1, Term::tuple(vec![a("a")]), true),
        (TUPLE_OK1, Term::tuple(vec![a("ok"), Term::Int(1)]), true),
        (MAP_1, Term::Map(vec![(a("a"), Term::Int(1))]), true),
        (MAP_EMPTY, Term::Map(vec![]), true),
        (
            MAP_2,
            Term::Map(vec![(a("a"), Term::Int(1)), (a("b"), Term::from("x"))]),
            true,
        ),
        (
            BITS_3,
            Term::BitBinary {
                bytes: vec![160],
                bits: 3,
            },
            true,
        ),
        (
            BITS_11,
            Term::BitBinary {
                bytes: vec![255, 224],
                bits: 3,
            },
            true,
        ),
        (PID, pid("nonode@nohost", 80, 0, 0), true),
        (
            PORT,
            Term::Port(ExternalPort {
                node: Atom::new("nonode@nohost"),
                id: 0,
                creation: 0,
            }),
            true,
        ),
        (FUN_LOCAL, Term::Fun(FUN_LOCAL[1..].to_vec()), true),
        (FUN_EXPORT, Term::Fun(FUN_EXPORT[1..].to_vec()), true),
        (
            LARGE_TUPLE,
            Term::tuple((1..=256).map(Term::Int).collect()),
            true,
        ),
        (UNICODE_STRING, ints(&[104, 233, 108, 108, 111, 8364]), true),
        (
            NESTED,
            Term::tuple(vec![
                a("reply"),
                Term::List(vec![
                    Term::tuple(vec![a("a"), Term::Int(1)]),
                    Term::tuple(vec![a("b"), Term::List(vec![a("x"), a("y")])]),
                ]),
                Term::Map(vec![(
                    Term::from("k"),
                    Term::tuple(vec![Term::Float(1.0), a("undefined")]),
                )]),
            ]),
            true,
        ),
        (TRUE, a("true"), true),
    ];
    for (bytes, term, canonical) in cases {
        let decoded = Term::decode(bytes).unwrap_or_else(|e| panic!("{term}: {e}"));
        assert_eq!(decoded, term, "decoding {bytes:?}");
        assert_eq!(etf::skip_prefix(bytes), Ok(bytes.len()));
        let serde_decoded: Term = etf::from_slice(bytes).unwrap();
        assert_eq!(serde_decoded, term);
        if canonical {
            assert_eq!(enc(&term), bytes, "encoding {term}");
            assert_eq!(etf::to_vec(&term).unwrap(), bytes, "serde-encoding {term}");
        } else {
            assert_eq!(Term::decode(&enc(&term)).unwrap(), term);
        }
    }
    // A reference from Erlang: decode, and re-encode byte for byte.
    let r = Term::decode(REF).unwrap();
    match &r {
        Term::Ref(r) => {
            assert_eq!(r.node.as_str(), "nonode@nohost");
            assert_eq!(r.id.len(), 3);
        }
        other => panic!("not a ref: {other}"),
    }
    assert_eq!(enc(&r), REF);
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Kv {
    A(i32),
    B(Vec<Atom>),
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Top {
    Reply(Vec<Kv>, HashMap<String, (f64, Option<i32>)>),
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Ab {
    a: i32,
    b: String,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
enum OkTag {
    Ok(i32),
}

fn nested_value() -> Top {
    Top::Reply(
        vec![Kv::A(1), Kv::B(vec![Atom::new("x"), Atom::new("y")])],
        HashMap::from([("k".to_string(), (1.0, None))]),
    )
}

#[test]
fn serde_matches_erlang_bytes() {
    assert_eq!(etf::to_vec(&nested_value()).unwrap(), NESTED);
    assert_eq!(etf::from_slice::<Top>(NESTED).unwrap(), nested_value());
    let ab = Ab {
        a: 1,
        b: "x".into(),
    };
    assert_eq!(etf::to_vec(&ab).unwrap(), MAP_2);
    assert_eq!(etf::from_slice::<Ab>(MAP_2).unwrap(), ab);
    assert_eq!(etf::to_vec(&OkTag::Ok(1)).unwrap(), TUPLE_OK1);
    assert_eq!(etf::from_slice::<OkTag>(TUPLE_OK1).unwrap(), OkTag::Ok(1));
    assert_eq!(etf::to_vec(&vec![1u8, 2, 3]).unwrap(), STRING_123);
    assert_eq!(etf::to_vec(&vec![1000, 2000]).unwrap(), LIST_BIG);
    assert_eq!(etf::to_vec(&Vec::<i32>::new()).unwrap(), NIL);
    assert_eq!(etf::to_vec(&true).unwrap(), TRUE);
    assert_eq!(etf::to_vec(&()).unwrap(), ATOM_OK);
    assert_eq!(etf::to_vec("hello").unwrap(), BIN_HELLO);
    assert_eq!(etf::to_vec(&1.5f64).unwrap(), FLOAT_1_5);
    assert_eq!(etf::to_vec(&1.5f32).unwrap(), FLOAT_1_5);
    assert_eq!(etf::to_vec(&i64::MIN).unwrap(), INT_I64MIN);
    assert_eq!(etf::to_vec(&u64::MAX).unwrap(), INT_U64MAX);
    assert_eq!(etf::to_vec(&(1u128 << 64)).unwrap(), INT_2P64);
    assert_eq!(etf::to_vec(&-(1i128 << 100)).unwrap(), INT_M2P100);
    assert_eq!(etf::to_vec(&2147483648u32).unwrap(), INT_I32MAX1);
    assert_eq!(etf::to_vec(&-1i8).unwrap(), INT_M1);
    assert_eq!(etf::to_vec(&256u16).unwrap(), INT_256);
    assert_eq!(
        etf::to_vec(&HashMap::from([("a", 1)])).unwrap(),
        // #{<<"a">> => 1}: a map's str keys are binaries
        [131, 116, 0, 0, 0, 1, 109, 0, 0, 0, 1, b'a', 97, 1]
    );

    // Decoding Erlang's own terms into Rust types.
    type Mixed = (String, Vec<u8>, String, HashMap<String, f64>, i128);
    let m: Mixed = etf::from_slice(MIXED_OTP25).unwrap();
    assert_eq!(m.0, "ok");
    assert_eq!(m.1, [1, 2, 3]);
    assert_eq!(m.2, "hi");
    assert_eq!(m.3, HashMap::from([("a".to_string(), 1.5)]));
    assert_eq!(m.4, -12345678901234567890);
    assert_eq!(etf::from_slice::<f64>(FLOAT_OLD).unwrap(), 1.5);
    assert_eq!(etf::from_slice::<String>(ATOM_LATIN1_OLD).unwrap(), "hé");
    assert_eq!(etf::from_slice::<String>(UNICODE_STRING).unwrap(), "héllo€");
    assert_eq!(
        etf::from_slice::<Atom>(ATOM_UNICODE).unwrap().as_str(),
        "héllö€"
    );
    assert_eq!(etf::from_slice::<u64>(INT_U64MAX).unwrap(), u64::MAX);
    assert!(matches!(
        etf::from_slice::<i64>(INT_U64MAX),
        Err(DecodeError::IntegerOutOfRange { offset: 1, .. })
    ));
    assert!(matches!(
        etf::from_slice::<i128>(INT_2P3000),
        Err(DecodeError::IntegerOutOfRange { .. })
    ));
    assert_eq!(etf::from_slice::<Vec<i32>>(LARGE_TUPLE).unwrap().len(), 256);
    assert_eq!(etf::from_slice::<Vec<u8>>(BIN_BYTES).unwrap(), [0, 1, 255]);
    assert_eq!(
        etf::from_slice::<Vec<u8>>(&etf::to_vec(&[1, 2, 3]).unwrap()).unwrap(),
        [1, 2, 3]
    );
    assert_eq!(
        etf::from_slice::<ExternalPid>(PID).unwrap().node.as_str(),
        "nonode@nohost"
    );
    assert_eq!(etf::from_slice::<ExternalPort>(PORT).unwrap().id, 0);
    assert_eq!(etf::from_slice::<ExternalRef>(REF).unwrap().id.len(), 3);
}

// ---------------------------------------------------------------------------
// The serde mapping.

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Unit;

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Meters(f64);

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Pair(i32, String);

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename_all = "snake_case")]
enum Cmd {
    Stop,
    Say(String),
    Move(i32, i32),
    Set { key: String, value: Option<u8> },
    Wrap(Pair),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Everything {
    flag: bool,
    small: u8,
    neg: i16,
    wide: u128,
    ch: char,
    ratio: f32,
    text: String,
    maybe: Option<String>,
    nothing: Option<i32>,
    unit: (),
    unit_struct: Unit,
    newtype: Meters,
    pair: Pair,
    list: Vec<Cmd>,
    map: HashMap<i32, Vec<String>>,
    atom: Atom,
    term: Term,
    pid: ExternalPid,
}

fn everything() -> Everything {
    Everything {
        flag: true,
        small: 200,
        neg: -300,
        wide: u128::MAX,
        ch: '€',
        ratio: 0.25,
        text: "héllo".into(),
        maybe: Some("x".into()),
        nothing: None,
        unit: (),
        unit_struct: Unit,
        newtype: Meters(1.5),
        pair: Pair(7, "seven".into()),
        list: vec![
            Cmd::Stop,
            Cmd::Say("hi".into()),
            Cmd::Move(-1, 2),
            Cmd::Set {
                key: "k".into(),
                value: Some(3),
            },
            Cmd::Set {
                key: "k".into(),
                value: None,
            },
            Cmd::Wrap(Pair(1, "one".into())),
        ],
        map: HashMap::from([(1, vec!["a".into()]), (-5, vec![])]),
        atom: Atom::new("EXIT"),
        term: Term::tuple(vec![
            Term::atom("x"),
            Term::ImproperList(vec![Term::Int(1)], Box::new(Term::Int(2))),
        ]),
        pid: ExternalPid {
            node: Atom::new("n@h"),
            id: 1,
            serial: 2,
            creation: 3,
        },
    }
}

#[test]
fn serde_round_trip_and_shapes() {
    let v = everything();
    let bytes = etf::to_vec(&v).unwrap();
    assert_eq!(etf::from_slice::<Everything>(&bytes).unwrap(), v);
    // The shape, as a Term.
    let t = Term::decode(&bytes).unwrap();
    let Term::Map(pairs) = &t else {
        panic!("not a map: {t}")
    };
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key.as_atom() == Some(k))
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get("flag"), Term::atom("true"));
    assert_eq!(get("ch"), Term::Int(0x20ac));
    assert_eq!(get("text"), Term::from("héllo"));
    assert_eq!(get("maybe"), Term::from("x"));
    assert_eq!(get("nothing"), Term::atom("undefined"));
    assert_eq!(get("unit"), Term::atom("ok"));
    assert_eq!(get("unit_struct"), Term::atom("Unit"));
    assert_eq!(get("newtype"), Term::Float(1.5));
    assert_eq!(
        get("pair"),
        Term::tuple(vec![Term::Int(7), Term::from("seven")])
    );
    assert_eq!(get("atom"), Term::atom("EXIT"));
    assert_eq!(get("pid"), Term::Pid(v.pid.clone()));
    assert_eq!(get("term"), v.term);
    let Term::List(cmds) = get("list") else {
        panic!()
    };
    let expect = [
        "stop",
        "{say,<<\"hi\">>}",
        "{move,-1,2}",
        "{set,#{key => <<\"k\">>,value => 3}}",
        "{set,#{key => <<\"k\">>,value => undefined}}",
        "{wrap,{1,<<\"one\">>}}",
    ];
    for (c, e) in cmds.iter().zip(expect) {
        assert_eq!(c.to_string(), e);
    }
}

#[test]
fn serde_decoding_leniency_and_errors() {
    // Structs: binary keys, unknown keys skipped; deny_unknown_fields refuses them.
    #[derive(Deserialize, Debug, PartialEq)]
    struct S {
        a: i32,
    }
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        a: i32,
    }
    let t = Term::Map(vec![
        (Term::from("a"), Term::Int(1)),
        (
            Term::atom("zzz"),
            Term::tuple(vec![Term::List(vec![Term::Float(1.0)])]),
        ),
    ]);
    let b = enc(&t);
    assert_eq!(etf::from_slice::<S>(&b).unwrap(), S { a: 1 });
    assert!(etf::from_slice::<Strict>(&b).is_err());
    // Strings from charlists and atoms; invalid UTF-8 refused with its offset.
    assert_eq!(
        etf::from_slice::<String>(&enc(&ints(&[104, 105]))).unwrap(),
        "hi"
    );
    assert_eq!(
        etf::from_slice::<String>(&enc(&Term::atom("ok"))).unwrap(),
        "ok"
    );
    assert_eq!(
        etf::from_slice::<String>(&enc(&Term::List(vec![]))).unwrap(),
        ""
    );
    assert_eq!(
        etf::from_slice::<String>(&enc(&Term::binary(vec![0xff]))),
        Err(DecodeError::InvalidUtf8 { offset: 1 })
    );
    assert!(etf::from_slice::<String>(&enc(&ints(&[0x110000]))).is_err());
    // Integers never wrap.
    assert!(etf::from_slice::<u8>(&enc(&Term::Int(256))).is_err());
    assert!(etf::from_slice::<u8>(&enc(&Term::Int(-1))).is_err());
    assert!(etf::from_slice::<i8>(&enc(&Term::Int(-129))).is_err());
    assert_eq!(etf::from_slice::<i8>(&enc(&Term::Int(-128))).unwrap(), -128);
    assert_eq!(
        etf::from_slice::<i128>(&enc(&big(i128::MIN))).unwrap(),
        i128::MIN
    );
    assert!(etf::from_slice::<i128>(&etf::to_vec(&u128::MAX).unwrap()).is_err());
    assert_eq!(etf::from_slice::<f64>(&enc(&Term::Int(3))).unwrap(), 3.0);
    assert!(etf::from_slice::<bool>(&enc(&Term::atom("yes"))).is_err());
    assert!(etf::from_slice::<()>(&enc(&Term::atom("error"))).is_err());
    // Tuples: arity must match; a list of the right length is accepted.
    assert!(etf::from_slice::<(i32, i32)>(&enc(&Term::tuple(vec![Term::Int(1)]))).is_err());
    assert_eq!(
        etf::from_slice::<(i32, i32)>(&enc(&ints(&[1000, 2]))).unwrap(),
        (1000, 2)
    );
    // Enums: wrong shapes are errors.
    assert!(etf::from_slice::<Cmd>(&enc(&Term::atom("say"))).is_err());
    assert!(
        etf::from_slice::<Cmd>(&enc(&Term::tuple(vec![Term::atom("stop"), Term::Int(1)]))).is_err()
    );
    assert!(
        etf::from_slice::<Cmd>(&enc(&Term::tuple(vec![Term::atom("nope"), Term::Int(1)]))).is_err()
    );
    assert!(
        etf::from_slice::<Cmd>(&enc(&Term::tuple(vec![Term::atom("move"), Term::Int(1)]))).is_err()
    );
    // Errors carry an offset and say what went wrong.
    let e = etf::from_slice::<Vec<i32>>(&enc(&Term::List(vec![Term::Int(1), Term::atom("x")])))
        .unwrap_err();
    assert_eq!(e.offset(), Some(8));
    assert_eq!(
        e.to_string(),
        "expected an integer, found an atom at byte 8"
    );
    // Trailing bytes; from_prefix reads a control term followed by a payload.
    let mut frame = etf::to_vec(&(1, Atom::new("ctl"))).unwrap();
    let first = frame.len();
    etf::encode_into(&Cmd::Say("payload".into()), &mut frame).unwrap();
    assert_eq!(
        etf::from_slice::<(i32, Atom)>(&frame),
        Err(DecodeError::TrailingBytes { offset: first })
    );
    let ((n, ctl), used): ((i32, Atom), usize) = etf::from_prefix(&frame).unwrap();
    assert_eq!((n, ctl.as_str(), used), (1, "ctl", first));
    assert_eq!(etf::skip_prefix(&frame), Ok(first));
    assert_eq!(
        etf::from_slice::<Cmd>(&frame[used..]).unwrap(),
        Cmd::Say("payload".into())
    );
    assert_eq!(Term::decode_prefix(&frame).unwrap().1, first);
}

#[test]
fn encode_errors() {
    struct BadTuple;
    impl Serialize for BadTuple {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeTuple;
            let mut t = s.serialize_tuple(3)?;
            t.serialize_element(&1)?;
            t.end()
        }
    }
    struct RawNotBytes;
    impl Serialize for RawNotBytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_newtype_struct(etf::RAW_TERM, &5)
        }
    }
    struct LongName;
    impl Serialize for LongName {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let name: &'static str = Box::leak("x".repeat(256).into_boxed_str());
            s.serialize_unit_struct(name)
        }
    }
    let mut out = vec![1, 2, 3];
    assert_eq!(
        etf::encode_into(&BadTuple, &mut out),
        Err(EncodeError::TupleLength {
            expected: 3,
            found: 1
        })
    );
    assert_eq!(
        out,
        [1, 2, 3],
        "a failed encode leaves the buffer as it was"
    );
    assert_eq!(etf::to_vec(&RawNotBytes), Err(EncodeError::RawTermNotBytes));
    assert!(matches!(
        etf::to_vec(&LongName),
        Err(EncodeError::AtomTooLong(_))
    ));
    struct Raw(&'static [u8]);
    impl Serialize for Raw {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            etf::serialize_raw_term(self.0, s)
        }
    }
    assert!(matches!(
        etf::to_vec(&Raw(&[97])),
        Err(EncodeError::InvalidRawTerm(_))
    ));
    assert!(matches!(
        etf::to_vec(&Raw(&[97, 1, 97, 2])),
        Err(EncodeError::InvalidRawTerm(_))
    ));
    assert_eq!(etf::to_vec(&Raw(&[97, 1])).unwrap(), [131, 97, 1]);
    assert!(Atom::try_new(&"é".repeat(256)).is_none());
    assert!(Atom::try_new(&"é".repeat(255)).is_some());
}

// ---------------------------------------------------------------------------
// Untagged catch-alls: serde buffers the input through `deserialize_any`.

#[derive(Deserialize, Debug, PartialEq)]
enum Msg {
    #[serde(rename = "ping")]
    Ping(ExternalPid),
    #[serde(rename = "add")]
    Add(i64, i64),
    #[serde(rename = "stop")]
    Stop,
    #[serde(rename = "config")]
    Config { verbose: bool },
    #[serde(untagged)]
    Other(Term),
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(untagged)]
enum Loose {
    Int(i64),
    Text(String),
    Any(Term),
}

#[test]
fn untagged_catch_all() {
    let p = ExternalPid {
        node: Atom::new("a@b"),
        id: 5,
        serial: 0,
        creation: 1,
    };
    let a = Term::atom;
    let ping = Term::tuple(vec![a("ping"), Term::Pid(p.clone())]);
    assert_eq!(
        etf::from_slice::<Msg>(&enc(&ping)).unwrap(),
        Msg::Ping(p.clone())
    );
    let add = Term::tuple(vec![a("add"), Term::Int(1), Term::Int(-2)]);
    assert_eq!(etf::from_slice::<Msg>(&enc(&add)).unwrap(), Msg::Add(1, -2));
    assert_eq!(etf::from_slice::<Msg>(&enc(&a("stop"))).unwrap(), Msg::Stop);
    let cfg = Term::tuple(vec![
        a("config"),
        Term::Map(vec![(a("verbose"), a("true"))]),
    ]);
    assert_eq!(
        etf::from_slice::<Msg>(&enc(&cfg)).unwrap(),
        Msg::Config { verbose: true }
    );
    // Everything else lands in Other, unchanged.
    let others = vec![
        a("foo"),
        a("true"),
        a("undefined"),
        a("ok"),
        Term::tuple(vec![a("ping"), Term::Int(1)]),
        Term::tuple(vec![a("pong"), Term::Int(1), Term::from("x")]),
        Term::tuple(vec![a("add"), Term::Int(1)]),
        Term::tuple(vec![Term::Int(1), Term::Int(2)]),
        Term::tuple(vec![]),
        Term::tuple(vec![a("solo")]),
        Term::tuple(vec![a("t"), Term::List(vec![Term::Int(1000)])]),
        Term::tuple(vec![a("t"), Term::tuple(vec![a("u"), Term::List(vec![])])]),
        Term::Map(vec![(a("k"), Term::Int(1))]),
        Term::Map(vec![
            (Term::from("k"), Term::Int(1)),
            (Term::Int(2), a("v")),
        ]),
        Term::Pid(p.clone()),
        Term::ImproperList(vec![Term::Int(1)], Box::new(a("t"))),
        big(1 << 70),
        big(-(1 << 70)),
        Term::Int(i64::MIN),
        Term::from(u64::MAX),
        Term::Float(-0.0),
        Term::binary(vec![1, 2]),
        ints(&[1, 2, 3]),
        Term::BitBinary {
            bytes: vec![1],
            bits: 1,
        },
        Term::Fun(FUN_EXPORT[1..].to_vec()),
        Term::List(vec![Term::Pid(p.clone()), Term::tuple(vec![Term::Int(1)])]),
    ];
    for t in others {
        assert_eq!(
            etf::from_slice::<Msg>(&enc(&t)).unwrap(),
            Msg::Other(t.clone()),
            "{t}"
        );
    }
    // And random terms too.
    let mut rng = Rng(0x5eed_1234_5678_9abc);
    for _ in 0..2000 {
        let t = random_term(&mut rng, 4);
        let got = etf::from_slice::<Msg>(&enc(&t)).unwrap();
        if let Msg::Other(o) = &got {
            assert_eq!(o, &t);
        }
    }
    // Plain untagged enums: typed variants first.
    assert_eq!(
        etf::from_slice::<Loose>(&enc(&Term::Int(5))).unwrap(),
        Loose::Int(5)
    );
    assert_eq!(
        etf::from_slice::<Loose>(&enc(&Term::from("s"))).unwrap(),
        Loose::Text("s".into())
    );
    let t = Term::tuple(vec![Term::Int(1), Term::Int(2)]);
    assert_eq!(etf::from_slice::<Loose>(&enc(&t)).unwrap(), Loose::Any(t));
}

// ---------------------------------------------------------------------------
// Properties and fuzzing.

#[test]
fn random_terms_round_trip() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for i in 0..3000 {
        let t = random_term(&mut rng, 5);
        let bytes = enc(&t);
        assert_eq!(Term::decode(&bytes).as_ref(), Ok(&t), "term {i}: {t}");
        assert_eq!(etf::skip_prefix(&bytes), Ok(bytes.len()));
        assert_eq!(etf::to_vec(&t).unwrap(), bytes);
        assert_eq!(etf::from_slice::<Term>(&bytes).as_ref(), Ok(&t));
        let mut body = Vec::new();
        etf::encode_term_body(&t, &mut body);
        assert_eq!(body, bytes[1..]);
        assert_eq!(etf::decode_term_body(&body).as_ref(), Ok(&t));
        // With bytes after it: the prefix functions measure it.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[131, 106, 0]);
        assert_eq!(
            Term::decode_prefix(&longer).unwrap(),
            (t.clone(), bytes.len())
        );
        assert_eq!(
            Term::decode(&longer),
            Err(DecodeError::TrailingBytes {
                offset: bytes.len()
            })
        );
        // Every strict prefix is an error (checked on the smaller ones).
        if bytes.len() < 300 {
            for n in 0..bytes.len() {
                assert!(Term::decode(&bytes[..n]).is_err(), "prefix {n} of {t}");
                assert!(etf::skip_prefix(&bytes[..n]).is_err());
                assert!(etf::from_slice::<Term>(&bytes[..n]).is_err());
            }
        }
    }
}

#[derive(Deserialize, Debug)]
#[allow(dead_code)]
enum Shape {
    Stop,
    Say(String),
    Move(i32, i32),
    Set { key: String, value: Option<u8> },
}

#[derive(Deserialize, Debug)]
#[allow(dead_code)]
struct Typed {
    a: Vec<Shape>,
    b: HashMap<String, (f64, Vec<u8>)>,
    c: Option<Box<Typed>>,
}

/// Runs every decoding entry point on `bytes`; none may panic.
fn decode_all_ways(bytes: &[u8]) {
    let _ = Term::decode(bytes);
    let _ = etf::skip_prefix(bytes);
    let _ = etf::from_slice::<Term>(bytes);
    let _ = etf::from_slice::<Msg>(bytes);
    let _ = etf::from_slice::<Typed>(bytes);
    let _ = etf::from_slice::<Vec<String>>(bytes);
    let _ = etf::from_slice::<(i64, u8, char)>(bytes);
    let _ = etf::from_slice::<serde::de::IgnoredAny>(bytes);
    if bytes.len() > 1 {
        let _ = etf::decode_term_body(&bytes[1..]);
    }
}

#[test]
fn mutations_never_panic() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    for _ in 0..1500 {
        let t = random_term(&mut rng, 4);
        let mut bytes = enc(&t);
        for _ in 0..4 {
            let i = rng.usize(bytes.len());
            match rng.below(4) {
                0 => bytes[i] = rng.next() as u8,
                1 => bytes[i] ^= 1 << rng.below(8),
                2 => bytes[i] = [0, 255, 1, 106, 104, 108, 116][rng.usize(7)],
                _ => {
                    bytes.truncate(i.max(1));
                }
            }
            decode_all_ways(&bytes);
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x1357_9bdf_2468_ace0);
    // Tags weighted towards the real ones, so the bytes get somewhere.
    const TAGS: &[u8] = &[
        70, 77, 80, 82, 88, 89, 90, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
        110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121,
    ];
    let mut bytes = Vec::new();
    for _ in 0..300_000 {
        bytes.clear();
        bytes.push(if rng.chance(50) {
            rng.next() as u8
        } else {
            131
        });
        let n = rng.usize(24);
        for _ in 0..n {
            let b = match rng.below(3) {
                0 => TAGS[rng.usize(TAGS.len())],
                1 => rng.below(4) as u8,
                _ => rng.next() as u8,
            };
            bytes.push(b);
        }
        let _ = Term::decode(&bytes);
        let _ = etf::skip_prefix(&bytes);
        if rng.chance(8) {
            decode_all_ways(&bytes);
        }
    }
}

#[test]
fn hostile_lengths_fail_before_allocating() {
    let cases: &[&[u8]] = &[
        &[131, 108, 255, 255, 255, 255, 97, 1, 106], // list of 2^32-1
        &[131, 105, 255, 255, 255, 255, 97, 1],      // tuple
        &[131, 116, 255, 255, 255, 255, 97, 1, 97, 1], // map
        &[131, 109, 255, 255, 255, 255, 1, 2],       // binary
        &[131, 77, 255, 255, 255, 255, 3, 1],        // bitstring
        &[131, 111, 255, 255, 255, 255, 0, 1],       // big
        &[131, 107, 255, 255, 1],                    // string
        &[131, 118, 255, 255, 97],                   // atom
        &[131, 90, 255, 255, 119, 1, 97, 0, 0, 0, 0], // reference
        &[131, 112, 255, 255, 255, 255, 0],          // fun
    ];
    for bytes in cases {
        assert!(Term::decode(bytes).is_err(), "{bytes:?}");
        assert!(etf::skip_prefix(bytes).is_err());
        assert!(etf::from_slice::<Term>(bytes).is_err());
        assert!(etf::from_slice::<Vec<u8>>(bytes).is_err());
        assert!(etf::from_slice::<String>(bytes).is_err());
        assert!(etf::from_slice::<HashMap<i32, i32>>(bytes).is_err());
        assert!(etf::from_slice::<Msg>(bytes).is_err());
    }
}

#[test]
fn refused_tags_and_bad_atoms() {
    let refused = [
        (80u8, "COMPRESSED"),
        (82, "ATOM_CACHE_REF"),
        (121, "LOCAL_EXT"),
        (117, "FUN_EXT"),
    ];
    for (tag, name) in refused {
        let bytes = [131, tag, 0, 0, 0, 4, 1, 2, 3, 4];
        let e = Term::decode(&bytes).unwrap_err();
        assert_eq!(
            e,
            DecodeError::UnsupportedTag {
                offset: 1,
                tag,
                name
            }
        );
        assert!(e.to_string().contains(name), "{e}");
        assert_eq!(etf::skip_prefix(&bytes), Err(e.clone()));
        assert!(etf::from_slice::<Term>(&bytes).is_err());
    }
    // In a pid's node.
    assert!(matches!(
        Term::decode(&[131, 88, 82, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        Err(DecodeError::UnsupportedTag {
            offset: 2,
            tag: 82,
            ..
        })
    ));
    assert_eq!(
        Term::decode(&[131, 1]),
        Err(DecodeError::UnknownTag { offset: 1, tag: 1 })
    );
    assert_eq!(
        Term::decode(&[130, 106]),
        Err(DecodeError::BadVersion {
            offset: 0,
            found: 130
        })
    );
    assert_eq!(
        Term::decode(&[]),
        Err(DecodeError::UnexpectedEof { offset: 0 })
    );
    // Atoms: 255 characters fine, 256 refused; bad UTF-8 refused.
    let mut ok = vec![131, 118, 1, 254];
    ok.extend("é".repeat(255).as_bytes());
    assert_eq!(Term::decode(&ok).unwrap(), Term::atom(&"é".repeat(255)));
    let mut long = vec![131, 118, 2, 0];
    long.extend("é".repeat(256).as_bytes());
    assert_eq!(
        Term::decode(&long),
        Err(DecodeError::AtomTooLong { offset: 1 })
    );
    let mut latin = vec![131, 100, 1, 0];
    latin.extend([b'a'; 256]);
    assert_eq!(
        Term::decode(&latin),
        Err(DecodeError::AtomTooLong { offset: 1 })
    );
    assert_eq!(
        Term::decode(&[131, 119, 2, 0xc3, 0x28]),
        Err(DecodeError::InvalidUtf8 { offset: 1 })
    );
    // Malformed fields.
    assert!(matches!(
        Term::decode(&[131, 110, 1, 2, 5]),
        Err(DecodeError::Malformed { .. })
    ));
    assert!(matches!(
        Term::decode(&[131, 77, 0, 0, 0, 1, 9, 5]),
        Err(DecodeError::Malformed { .. })
    ));
    assert!(matches!(
        Term::decode(&[131, 77, 0, 0, 0, 1, 0, 5]),
        Err(DecodeError::Malformed { .. })
    ));
    assert!(matches!(
        Term::decode(&[131, 90, 0, 6, 119, 1, 97, 0, 0, 0, 0]),
        Err(DecodeError::Malformed { .. })
    ));
    let mut fun = FUN_LOCAL.to_vec();
    fun[5] += 1; // the size field no longer matches
    fun.push(106);
    assert!(Term::decode(&fun).is_err());
    assert!(etf::skip_prefix(&fun).is_err());
}

fn nested(depth: usize, open: &[u8], close: &[u8]) -> Vec<u8> {
    let mut v = vec![131];
    for _ in 0..depth {
        v.extend_from_slice(open);
    }
    v.push(106);
    for _ in 0..depth {
        v.extend_from_slice(close);
    }
    v
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow_and_is_skipped_whole() {
    let shapes: [(&[u8], &[u8]); 4] = [
        (&[108, 0, 0, 0, 1], &[106]),     // [[[...]]]
        (&[104, 1], &[]),                 // {{{...}}}
        (&[116, 0, 0, 0, 1, 97, 1], &[]), // #{1 => #{1 => ...}}
        (&[104, 2, 119, 1, b'v'], &[]),   // {v, {v, ...}}: nested enums
    ];
    for (open, close) in shapes {
        let deep = nested(100_000, open, close);
        assert!(matches!(
            Term::decode(&deep),
            Err(DecodeError::TooDeep { .. })
        ));
        // Skipping builds nothing and keeps a count, not a stack: any depth (a node's
        // reader finds a deep message's end, and refuses it alone).
        assert_eq!(etf::skip_prefix(&deep), Ok(deep.len()));
        assert!(etf::from_slice::<Term>(&deep).is_err());
        assert!(etf::from_slice::<Msg>(&deep).is_err());
        // Ignoring is skipping.
        assert!(etf::from_slice::<serde::de::IgnoredAny>(&deep).is_ok());
        assert!(etf::from_slice::<Typed>(&deep).is_err());
        // At the limit, all is well.
        let fine = nested(MAX_DEPTH, open, close);
        let t = Term::decode(&fine).unwrap();
        assert_eq!(etf::skip_prefix(&fine), Ok(fine.len()));
        assert_eq!(etf::from_slice::<Term>(&fine).unwrap(), t);
        assert_eq!(enc(&t), fine);
        let over = nested(MAX_DEPTH + 1, open, close);
        assert!(Term::decode(&over).is_err());
    }
    // Typed recursion is bounded the same way.
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    enum Tree {
        #[serde(rename = "v")]
        V(Box<Tree>),
        #[serde(rename = "leaf")]
        Leaf,
    }
    let mut deep = vec![131];
    for _ in 0..100_000 {
        deep.extend_from_slice(&[104, 2, 119, 1, b'v']);
    }
    deep.extend_from_slice(&[119, 4, b'l', b'e', b'a', b'f']);
    assert!(matches!(
        etf::from_slice::<Tree>(&deep),
        Err(DecodeError::TooDeep { .. })
    ));
}

// ---------------------------------------------------------------------------
// Erlang reads what we write.

#[test]
fn erlang_reads_our_encoding() {
    use std::process::Command;
    if Command::new("erl")
        .args(["-noshell", "-eval", "halt()."])
        .output()
        .is_err()
    {
        println!("note: erl is not on PATH; skipping the live Erlang check");
        return;
    }
    let mut cases: Vec<(Vec<u8>, String)> = vec![
        (
            etf::to_vec(&nested_value()).unwrap(),
            "{reply,[{a,1},{b,[x,y]}],#{<<107>> => {1.0,undefined}}}".into(),
        ),
        (
            etf::to_vec(&Cmd::Set {
                key: "k".into(),
                value: Some(3),
            })
            .unwrap(),
            "{set,#{key => <<107>>,value => 3}}".into(),
        ),
        (
            etf::to_vec(&(u128::MAX, -(1i128 << 100), i64::MIN, 2.5f64, 'x', ())).unwrap(),
            "{340282366920938463463374607431768211455,-1267650600228229401496703205376,\
             -9223372036854775808,2.5,120,ok}"
                .into(),
        ),
        (
            etf::to_vec(&(
                vec![1u8, 2, 3],
                vec![300, 400],
                Atom::new("héllo wörld"),
                Unit,
            ))
            .unwrap(),
            "{[1,2,3],[300,400],'héllo wörld','Unit'}".into(),
        ),
    ];
    let pid = Term::Pid(ExternalPid {
        node: Atom::new("other@host"),
        id: 42,
        serial: 1,
        creation: 7,
    });
    cases.push((
        enc(&Term::tuple(vec![
            pid,
            Term::ImproperList(vec![Term::Int(1)], Box::new(Term::atom("t"))),
        ])),
        "{<12345.42.1>,[1|t]}".into(),
    ));
    for (bytes, expect) in cases {
        let list: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
        let script = format!(
            "io:setopts([{{encoding, unicode}}]), T = binary_to_term(<<{}>>), io:format(\"~tw~n\", [T]), \
             io:format(\"~w~n\", [term_to_binary(T, [{{minor_version, 2}}]) =:= <<{}>>]), halt().",
            list.join(","),
            list.join(",")
        );
        let out = Command::new("erl")
            .args(["-noshell", "-eval", &script])
            .output()
            .expect("run erl");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let printed = lines.next().unwrap_or("");
        // Pids from other nodes print with a node number that depends on the
        // session; compare the rest.
        let printed = if expect.starts_with("{<") {
            let (head, tail) = printed.split_once('.').unwrap_or(("", printed));
            format!(
                "{{<12345.{}",
                if head.starts_with("{<") {
                    tail
                } else {
                    printed
                }
            )
        } else {
            printed.to_string()
        };
        assert_eq!(
            printed,
            expect,
            "erl said: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
