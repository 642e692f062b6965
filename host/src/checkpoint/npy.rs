//! The `.npy` header, written and parsed here (the container streams, so it cannot hand whole
//! arrays to ndarray-npy): magic `\x93NUMPY`, version, header length, then a Python dict literal
//! with `descr`, `fortran_order` and `shape`, padded with spaces and a newline to a multiple of
//! 64 bytes, as NumPy writes it (NEP 1, `numpy.lib.format`).

use super::DType;

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// What a `.npy` header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// The element type.
    pub dtype: DType,
    /// The shape.
    pub shape: Vec<u64>,
    /// Whether the data is in Fortran order (murmur writes C order).
    pub fortran_order: bool,
    /// Bytes of the header, magic to newline: where the data starts.
    pub len: usize,
}

/// The `.npy` header of a C-order array of `dtype` and `shape`: format version 1.0 (a 16-bit
/// length), or 2.0 when the dict is longer than 1.0 allows; its length is a multiple of 64.
pub fn npy_header(dtype: DType, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {tuple}, }}",
        dtype.descr()
    );
    // Version 1.0 holds the padded text's length in 16 bits, 2.0 in 32.
    let padded = |prefix: usize| (prefix + dict.len() + 1).div_ceil(64) * 64;
    let v1 = padded(10) - 10 <= usize::from(u16::MAX);
    let prefix = if v1 { 10 } else { 12 };
    let total = padded(prefix);
    let text_len = total - prefix;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(text_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(text_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Bytes to read before [`parse_npy_header`] knows the header's length.
pub const PREFIX_MAX: usize = 12;

/// The header length `bytes` (at least the first 10, or 12 for versions 2 and 3) announce, magic
/// to newline; an error names what is wrong.
pub fn npy_header_len(bytes: &[u8]) -> Result<usize, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("no .npy magic".into());
    }
    match bytes[6] {
        1 => Ok(10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]))),
        2 | 3 if bytes.len() >= 12 => {
            let n = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            Ok(12 + n as usize)
        }
        v => Err(format!(
            ".npy format version {v}.{} is not 1, 2 or 3",
            bytes[7]
        )),
    }
}

/// Parses a whole `.npy` header (magic to newline, as [`npy_header_len`] measures it).
pub fn parse_npy_header(bytes: &[u8]) -> Result<NpyHeader, String> {
    let len = npy_header_len(bytes)?;
    if bytes.len() < len {
        return Err(format!(".npy header of {len} bytes cut at {}", bytes.len()));
    }
    let start = if bytes[6] == 1 { 10 } else { 12 };
    let text = std::str::from_utf8(&bytes[start..len]).map_err(|_| "header is not UTF-8")?;
    let mut p = DictParser {
        s: text.trim_end().as_bytes(),
        i: 0,
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        match key.as_str() {
            "descr" => descr = Some(p.string()?),
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => return Err(format!("unknown key {other:?} in the .npy header")),
        }
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b'}')?;
            break;
        }
    }
    let descr = descr.ok_or("no descr in the .npy header")?;
    let dtype = DType::from_descr(&descr).ok_or_else(|| format!("dtype {descr:?} is not read"))?;
    Ok(NpyHeader {
        dtype,
        shape: shape.ok_or("no shape in the .npy header")?,
        fortran_order: fortran.ok_or("no fortran_order in the .npy header")?,
        len,
    })
}

/// A parser of the one Python literal a `.npy` header holds.
struct DictParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl DictParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.s.get(self.i) == Some(&c);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "expected {:?} at byte {} of the .npy header",
                c as char, self.i
            ))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let q = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a string at byte {}", self.i)),
        };
        let start = self.i + 1;
        let end = self.s[start..]
            .iter()
            .position(|&c| c == q)
            .ok_or("unterminated string in the .npy header")?;
        self.i = start + end + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + end]).into_owned())
    }

    fn boolean(&mut self) -> Result<bool, String> {
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.i..].starts_with(word) {
                self.i += word.len();
                return Ok(v);
            }
        }
        Err(format!("expected True or False at byte {}", self.i))
    }

    fn tuple(&mut self) -> Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
            dims.push(
                digits
                    .parse()
                    .map_err(|_| format!("expected a dimension at byte {start}"))?,
            );
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_numpy_s_bytes() {
        // What `np.save` writes for np.zeros((3, 4), '<f4') and np.zeros(5, '<u2'), 1.0 format.
        let h = npy_header(DType::F32, &[3, 4]);
        let dict = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
        assert_eq!(&h[..10], b"\x93NUMPY\x01\x00\x76\x00");
        assert_eq!(&h[10..10 + dict.len()], dict);
        assert_eq!(h.len(), 128);
        assert_eq!(h[127], b'\n');
        let h = npy_header(DType::U16, &[5]);
        assert!(std::str::from_utf8(&h[10..])
            .unwrap()
            .contains("'shape': (5,), }"));
        let h = npy_header(DType::U8, &[]);
        assert!(std::str::from_utf8(&h[10..])
            .unwrap()
            .contains("'shape': (), }"));
        assert_eq!(h.len() % 64, 0);
    }

    #[test]
    fn parse_round_trips_and_takes_other_spellings() {
        for d in DType::ALL {
            for shape in [vec![], vec![7], vec![2, 3, 4, 27]] {
                let h = npy_header(d, &shape);
                let p = parse_npy_header(&h).unwrap();
                assert_eq!((p.dtype, &p.shape, p.fortran_order), (d, &shape, false));
                assert_eq!(p.len, h.len());
            }
        }
        let mut other = b"\x93NUMPY\x01\x00".to_vec();
        let dict = b"{\"shape\":(2,3),\"fortran_order\":True,\"descr\":\"<f8\"}\n";
        other.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        other.extend_from_slice(dict);
        let p = parse_npy_header(&other).unwrap();
        assert_eq!(
            (p.dtype, p.shape, p.fortran_order),
            (DType::F64, vec![2, 3], true)
        );
        let mut bad = npy_header(DType::F32, &[2]);
        bad[0] = b'x';
        assert!(parse_npy_header(&bad).is_err());
        assert!(parse_npy_header(&npy_header(DType::F32, &[2])[..40]).is_err());
    }

    #[test]
    fn long_shapes_take_version_two() {
        let shape = vec![1u64; 30_000]; // 90,000 bytes of dict
        let h = npy_header(DType::U8, &shape);
        assert_eq!(h[6], 2);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(parse_npy_header(&h).unwrap().shape.len(), 30_000);
    }
}
