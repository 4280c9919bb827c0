//! The two encodings of the report and ack bodies: JSON, and MessagePack
//! for the report path at scale.
//!
//! A body's encoding is named by its `Content-Type`: MessagePack under
//! [`MSGPACK`] (or `application/vnd.msgpack`), JSON under anything else, as
//! before MessagePack was added. An answer is MessagePack when the request's
//! `Accept` lists it, else JSON. Error bodies ([`crate::ErrorBody`]) are
//! always JSON.
//!
//! An agent sends JSON until a shaper has answered it in MessagePack, which
//! only a shaper that reads MessagePack does, so that new agents keep
//! working with older shapers; see [`Negotiated`].
//!
//! MessagePack carries the same serde data model: structs as maps with
//! their field names (`rmp_serde::to_vec_named`), so optional fields,
//! defaults, internally tagged enums and `deny_unknown_fields` work as in
//! JSON, and floats travel as their bits instead of as decimal text.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The MessagePack media type this crate sends.
pub const MSGPACK: &str = "application/msgpack";
/// The JSON media type.
pub const JSON: &str = "application/json";
/// The `Accept` an agent sends: MessagePack first, JSON as well.
pub const ACCEPT_BOTH: &str = "application/msgpack, application/json;q=0.9";

/// A body's encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    #[default]
    Json,
    MessagePack,
}

/// A body that could not be encoded or decoded, with the encoding's own
/// message (it names the field or position).
#[derive(Debug, thiserror::Error)]
#[error("{encoding} body: {message}")]
pub struct CodecError {
    pub encoding: Encoding,
    pub message: String,
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Encoding::Json => "JSON",
            Encoding::MessagePack => "MessagePack",
        })
    }
}

/// The media type without its parameters, trimmed.
fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or("").trim()
}

fn is_msgpack(media_type: &str) -> bool {
    let e = essence(media_type);
    e.eq_ignore_ascii_case(MSGPACK) || e.eq_ignore_ascii_case("application/vnd.msgpack")
}

impl Encoding {
    /// The media type to send in `Content-Type`.
    pub fn media_type(self) -> &'static str {
        match self {
            Encoding::Json => JSON,
            Encoding::MessagePack => MSGPACK,
        }
    }

    /// The encoding of a body with this `Content-Type` (absent: JSON).
    pub fn of_content_type(content_type: Option<&str>) -> Self {
        match content_type {
            Some(t) if is_msgpack(t) => Encoding::MessagePack,
            _ => Encoding::Json,
        }
    }

    /// The encoding of the answer to a request with this `Accept`:
    /// MessagePack when it is listed with a quality above 0, else JSON.
    pub fn for_accept(accept: Option<&str>) -> Self {
        let listed = accept.is_some_and(|a| {
            a.split(',').any(|item| {
                is_msgpack(item)
                    && !item.split(';').skip(1).any(|p| {
                        let p = p.trim();
                        p.strip_prefix("q=")
                            .is_some_and(|q| q.trim().parse::<f64>().is_ok_and(|q| q <= 0.0))
                    })
            })
        });
        if listed {
            Encoding::MessagePack
        } else {
            Encoding::Json
        }
    }

    /// `v` in this encoding.
    pub fn encode<T: Serialize + ?Sized>(self, v: &T) -> Result<Vec<u8>, CodecError> {
        let r = match self {
            Encoding::Json => serde_json::to_vec(v).map_err(|e| e.to_string()),
            Encoding::MessagePack => rmp_serde::to_vec_named(v).map_err(|e| e.to_string()),
        };
        r.map_err(|message| CodecError {
            encoding: self,
            message,
        })
    }

    /// A `T` from a body in this encoding: the whole body, one value (as
    /// `serde_json` does, trailing bytes are refused).
    pub fn decode<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T, CodecError> {
        let r = match self {
            Encoding::Json => serde_json::from_slice(bytes).map_err(|e| e.to_string()),
            Encoding::MessagePack => decode_msgpack(bytes),
        };
        r.map_err(|message| CodecError {
            encoding: self,
            message,
        })
    }
}

/// Deepest nesting of a MessagePack body, as `serde_json`'s limit (the
/// messages nest 5 deep; rmp-serde's own default is 1,024).
const MAX_MSGPACK_DEPTH: usize = 128;

fn decode_msgpack<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let mut rest = bytes;
    let mut de = rmp_serde::Deserializer::new(&mut rest);
    de.set_max_depth(MAX_MSGPACK_DEPTH);
    let v = T::deserialize(&mut de).map_err(|e| e.to_string())?;
    drop(de);
    if !rest.is_empty() {
        return Err(format!("{} bytes after the end of the value", rest.len()));
    }
    Ok(v)
}

/// What an agent sends in: JSON until a shaper has answered in MessagePack
/// (set [`Negotiated::allow`] false to stay on JSON), and JSON again after a
/// shaper refused a MessagePack body as malformed (an older replica after a
/// fail-over).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// MessagePack may be used.
    pub allow: bool,
    sending: Encoding,
}

impl Negotiated {
    /// Starts with JSON; `allow`: MessagePack may follow.
    pub fn new(allow: bool) -> Self {
        Self {
            allow,
            sending: Encoding::Json,
        }
    }

    /// The encoding of the next body.
    pub fn sending(&self) -> Encoding {
        self.sending
    }

    /// The `Accept` to send.
    pub fn accept(&self) -> &'static str {
        if self.allow {
            ACCEPT_BOTH
        } else {
            JSON
        }
    }

    /// A successful answer came in `answered`: send in it from now on.
    pub fn answered(&mut self, answered: Encoding) {
        if self.allow {
            self.sending = answered;
        }
    }

    /// The shaper refused the last body as malformed (HTTP 400). Returns
    /// true when that body was MessagePack, which is then given up: the
    /// caller sends it again as JSON.
    pub fn refused_as_malformed(&mut self) -> bool {
        let was = self.sending == Encoding::MessagePack;
        self.sending = Encoding::Json;
        was
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_name_the_encoding() {
        assert_eq!(Encoding::of_content_type(None), Encoding::Json);
        assert_eq!(
            Encoding::of_content_type(Some("application/json")),
            Encoding::Json
        );
        assert_eq!(
            Encoding::of_content_type(Some("text/plain")),
            Encoding::Json
        );
        for t in [
            "application/msgpack",
            "Application/MsgPack; charset=binary",
            " application/vnd.msgpack",
        ] {
            assert_eq!(
                Encoding::of_content_type(Some(t)),
                Encoding::MessagePack,
                "{t}"
            );
        }
    }

    #[test]
    fn accept_lists_msgpack_or_not() {
        assert_eq!(Encoding::for_accept(None), Encoding::Json);
        assert_eq!(Encoding::for_accept(Some("*/*")), Encoding::Json);
        assert_eq!(
            Encoding::for_accept(Some("application/json")),
            Encoding::Json
        );
        assert_eq!(
            Encoding::for_accept(Some(ACCEPT_BOTH)),
            Encoding::MessagePack
        );
        assert_eq!(
            Encoding::for_accept(Some("application/json, application/msgpack;q=0")),
            Encoding::Json
        );
        assert_eq!(
            Encoding::for_accept(Some("application/vnd.msgpack;q=0.5")),
            Encoding::MessagePack
        );
    }

    #[test]
    fn negotiation_follows_the_answers() {
        let mut n = Negotiated::new(true);
        assert_eq!(n.sending(), Encoding::Json);
        n.answered(Encoding::MessagePack);
        assert_eq!(n.sending(), Encoding::MessagePack);
        assert!(n.refused_as_malformed());
        assert_eq!(n.sending(), Encoding::Json);
        assert!(!n.refused_as_malformed());
        n.answered(Encoding::Json);
        assert_eq!(n.sending(), Encoding::Json);

        let mut json_only = Negotiated::new(false);
        assert_eq!(json_only.accept(), JSON);
        json_only.answered(Encoding::MessagePack);
        assert_eq!(json_only.sending(), Encoding::Json);
    }

    #[test]
    fn bad_bodies_name_their_encoding() {
        let e = Encoding::MessagePack
            .decode::<crate::AckRequest>(&[0xc1])
            .expect_err("0xc1 is never used in MessagePack");
        assert!(e.to_string().starts_with("MessagePack body: "), "{e}");
        let e = Encoding::Json
            .decode::<crate::AckRequest>(b"{")
            .expect_err("truncated");
        assert!(e.to_string().starts_with("JSON body: "), "{e}");
    }

    #[test]
    fn msgpack_bodies_are_one_whole_value_of_bounded_depth() {
        let ack = crate::AckRequest {
            agent_id: "n".into(),
            acks: vec![],
        };
        let mut bytes = Encoding::MessagePack.encode(&ack).expect("encodes");
        assert_eq!(
            Encoding::MessagePack
                .decode::<crate::AckRequest>(&bytes)
                .ok(),
            Some(ack)
        );
        bytes.push(0xc0);
        let e = Encoding::MessagePack
            .decode::<crate::AckRequest>(&bytes)
            .expect_err("trailing nil");
        assert!(e.to_string().contains("1 bytes after the end"), "{e}");

        // An ack's failure message (inside an internally tagged enum, so
        // read through serde's buffered content, any value) nested 100,000
        // arrays deep: an error, not a stack overflow.
        let mut deep = vec![0x82, 0xa8];
        deep.extend_from_slice(b"agent_id");
        deep.extend_from_slice(&[0xa1, b'n', 0xa4]);
        deep.extend_from_slice(b"acks");
        deep.extend_from_slice(&[0x91, 0x82, 0xa9]);
        deep.extend_from_slice(b"action_id");
        deep.extend_from_slice(&[0xa1, b'x', 0xa7]);
        deep.extend_from_slice(b"outcome");
        deep.extend_from_slice(&[0x82, 0xa6]);
        deep.extend_from_slice(b"status");
        deep.push(0xa6);
        deep.extend_from_slice(b"failed");
        deep.push(0xa5);
        deep.extend_from_slice(b"error");
        deep.resize(deep.len() + 100_000, 0x91);
        let e = Encoding::MessagePack
            .decode::<crate::AckRequest>(&deep)
            .expect_err("too deep");
        assert!(e.to_string().contains("depth"), "{e}");
    }
}
