//! One full frame of the TUI with 10,000 objects in the list. Rendering
//! builds only the visible rows, so this should not grow with the list.

#[path = "../tests/tui_fixture/mod.rs"]
mod tui_fixture;

// The binaries' allocator (src/main.rs), so the numbers are theirs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use kapply::tui::app::Msg;
use kapply::tui::{App, Options};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use std::hint::black_box;

fn app(n: usize, w: u16, h: u16) -> App {
    let mut app = App::new(Options::default());
    app.update(Msg::Resize(w, h));
    app.start();
    app.update(Msg::Loaded(Ok(tui_fixture::big_plan(n))));
    app
}

fn frame(c: &mut Criterion) {
    for (w, h) in [(80u16, 24u16), (160, 40)] {
        let a = app(10_000, w, h);
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        c.bench_function(&format!("frame 10k objects {w}x{h}"), |b| {
            b.iter(|| {
                buf.reset();
                Widget::render(black_box(&a), area, &mut buf);
            })
        });
    }
    // The same rows on screen with 2,000 objects: the cost does not follow the list.
    let a = app(2_000, 160, 40);
    let area = Rect::new(0, 0, 160, 40);
    let mut buf = Buffer::empty(area);
    c.bench_function("frame 2k objects 160x40", |b| {
        b.iter(|| {
            buf.reset();
            Widget::render(black_box(&a), area, &mut buf);
        })
    });
    // Rebuilding the list (a filter or search keystroke) does walk every object.
    let mut a = app(10_000, 160, 40);
    c.bench_function("rebuild list 10k objects", |b| b.iter(|| a.rebuild()));
}

criterion_group!(benches, frame);
criterion_main!(benches);
