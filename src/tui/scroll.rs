//! Scrolling, decided in one place for every pane: which line is the first
//! shown. The app calls these on keys (so a page key moves by what shows),
//! the drawing code calls them again with the size it draws at (a resize
//! may have shrunk the pane since the key). Only the visible rows are built,
//! so the offsets are kept here rather than in ratatui's List or Table
//! state, whose widgets take every row on every frame.

use std::ops::Range;

/// The first line to show of `len` lines in a window of `page`, moving as
/// little as possible from `top`, so that the lines `want` show: a row and
/// what belongs above it (a group header, a path's head). When they do
/// not fit, the row's first line `row_start` shows.
pub fn keep_in_view(
    top: usize,
    want: Range<usize>,
    row_start: usize,
    len: usize,
    page: usize,
) -> usize {
    let mut top = top.min(len.saturating_sub(1));
    if want.start < top {
        top = want.start;
    }
    if page > 0 && want.end > top + page {
        top = want.end.saturating_sub(page);
    }
    top.min(row_start)
}

/// The furthest a window of `page` lines scrolls into `len` lines: its
/// last page, no blank lines below.
pub fn max_top(len: usize, page: usize) -> usize {
    len.saturating_sub(page)
}

/// `top` moved by `by` lines, within `0..=max`.
pub fn moved(top: usize, by: isize, max: usize) -> usize {
    top.saturating_add_signed(by).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_into_view_with_what_is_above_them() {
        // Below the window: the row ends the window.
        assert_eq!(keep_in_view(0, 9..10, 9, 20, 5), 5);
        // Above it: its header comes along.
        assert_eq!(keep_in_view(8, 3..5, 4, 20, 5), 3);
        // In view: nothing moves.
        assert_eq!(keep_in_view(2, 3..5, 4, 20, 5), 2);
        // Taller than the window: its first line shows.
        assert_eq!(keep_in_view(0, 4..12, 6, 20, 3), 6);
        // An offset past the end (the rows shrank) comes back.
        assert_eq!(keep_in_view(50, 1..2, 1, 3, 5), 1);
        assert_eq!(max_top(3, 5), 0);
        assert_eq!(max_top(30, 5), 25);
        assert_eq!(moved(3, -10, 25), 0);
        assert_eq!(moved(3, isize::MAX, 25), 25);
        assert_eq!(moved(3, 4, 25), 7);
    }
}
