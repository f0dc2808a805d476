//! Pagination of `tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`:
//! pages of [`ServerBuilder::page_size`](super::ServerBuilder::page_size) items with an opaque
//! `nextCursor`.
//!
//! A cursor names the offset of the next page, with a check so that a cursor that is not ours
//! (or was edited) is refused with -32602 "Invalid params", as the spec's
//! `server/utilities/pagination` asks. It is an offset into the list as it is when the next
//! page is asked for: when the registry changes between pages (and `list_changed` is sent) a
//! client may see an item twice or miss one, which is why it is told to list again.

use crate::proto::jsonrpc::{ErrorCode, ErrorObject};

/// A tag mixed into cursors so that small integers written by hand are not taken for ours.
const SALT: u64 = 0x6d63_7077_6972_6521;

fn check(offset: u64) -> u64 {
    // One round of a 64-bit mix (splitmix64's finalizer); not a secret, only a typo catcher.
    let mut x = offset ^ SALT;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) & 0xffff_ffff
}

/// The cursor for the page that starts at `offset`.
pub(crate) fn encode(offset: usize) -> String {
    let offset = offset as u64;
    format!("c{offset:x}-{:08x}", check(offset))
}

/// The offset a cursor names.
///
/// # Errors
/// -32602 when it is not a cursor of ours.
pub(crate) fn decode(cursor: &str) -> Result<usize, ErrorObject> {
    let invalid = || ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid cursor {cursor:?}"));
    let (offset, sum) = cursor.strip_prefix('c').and_then(|c| c.split_once('-')).ok_or_else(invalid)?;
    let offset = u64::from_str_radix(offset, 16).map_err(|_| invalid())?;
    let sum = u64::from_str_radix(sum, 16).map_err(|_| invalid())?;
    if sum != check(offset) {
        return Err(invalid());
    }
    usize::try_from(offset).map_err(|_| invalid())
}

/// One page of `items` from `cursor`, and the cursor of the next page if there is one. A cursor
/// past the end (the list shrank) gives an empty last page.
///
/// # Errors
/// -32602 for a cursor that is not ours.
pub(crate) fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page_size: Option<usize>,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(cursor) => decode(cursor)?.min(items.len()),
    };
    let end = page_size.map_or(items.len(), |size| start.saturating_add(size).min(items.len()));
    let next = (end < items.len()).then(|| encode(end));
    Ok((items[start..end].to_vec(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        for offset in [0, 1, 2, 99, 1 << 40] {
            assert_eq!(decode(&encode(offset)).unwrap(), offset);
        }
        assert_eq!(encode(2), format!("c2-{:08x}", check(2)));
        for bad in ["", "2", "c2", "c2-0", "cz-00000000", "c3-".to_owned().as_str()] {
            assert_eq!(decode(bad).unwrap_err().code, ErrorCode::INVALID_PARAMS, "{bad}");
        }
        let forged = encode(3).replacen("c3", "c4", 1);
        assert!(decode(&forged).is_err());
    }

    #[test]
    fn pages() {
        let items = [1, 2, 3, 4, 5];
        let (first, next) = page(&items, None, Some(2)).unwrap();
        assert_eq!(first, [1, 2]);
        let (second, next) = page(&items, next.as_deref(), Some(2)).unwrap();
        assert_eq!(second, [3, 4]);
        let (last, next) = page(&items, next.as_deref(), Some(2)).unwrap();
        assert_eq!((last.as_slice(), next), (&[5][..], None));
        assert_eq!(page(&items, None, None).unwrap(), (items.to_vec(), None));
        assert_eq!(page(&items[..1], Some(&encode(4)), Some(2)).unwrap(), (vec![], None));
    }
}
