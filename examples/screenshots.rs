//! Renders real frames of the TUI (the test fixture, driven by key events)
//! on ratatui's TestBackend and writes them as `screenshots/*.svg` and
//! `screenshots/*.png` (resvg). Run: `cargo run --example screenshots`.
//! The PNGs need DejaVu Sans Mono (Debian: fonts-dejavu-core); set
//! KAPPLY_FONT_DIR to look elsewhere.
//!
//! `cargo run --example screenshots -- --live` runs the real TUI in this
//! terminal on the same fixture, with a fake engine that answers after a
//! short delay (to try the keys; the end-to-end tests drive it in tmux).
//! `-- --demo` runs it against the embedded API server seeded with the demo
//! story (the real cluster engine, prune by `-l app=demo`).

#[path = "../tests/tui_fixture/mod.rs"]
mod tui_fixture;

use tui_fixture::{code, key, result, select};

use anyhow::Context;
use crossterm::event::KeyCode;
use kapply::tui::app::Msg;
use kapply::tui::{App, Options};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use resvg::{tiny_skia, usvg};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const CELL_W: f32 = 8.4;
const CELL_H: f32 = 17.0;
const FONT_SIZE: f32 = 14.0;
const BG: &str = "#1d1f21";
const FG: &str = "#d8d8d8";

fn app(opts: Options, w: u16, h: u16) -> App {
    let mut app = App::new(opts);
    app.clock = || "14:02:37".to_string();
    // The header names the cluster, as against a real one.
    app.conn.server = Some(kapply::ops::Server {
        url: "https://10.0.0.1:6443".into(),
        context: "prod".into(),
        namespace: "default".into(),
    });
    app.update(Msg::Resize(w, h));
    app.start();
    app.update(Msg::Loaded(Ok(tui_fixture::plan())));
    app
}

/// The screens, each with the keys that lead to it.
fn screens() -> Vec<(&'static str, App)> {
    let (w, h) = (120, 32);
    let mut out = Vec::new();

    let mut a = app(Options::default(), w, h);
    select(&mut a, "nginx-deployment");
    a.update(key(' '));
    select(&mut a, "app-config");
    a.update(key(' '));
    select(&mut a, "nginx-deployment");
    out.push(("list", a));

    let mut a = app(Options::default(), w, h);
    select(&mut a, "nginx-deployment");
    // K: the kept fields too.
    for m in [code(KeyCode::Tab), key('K'), key('j'), key('j'), key('j')] {
        a.update(m);
    }
    out.push(("fields", a));

    let mut a = app(Options::default(), w, h);
    select(&mut a, "nginx-deployment");
    for m in [code(KeyCode::Tab), key('j'), key(' '), key('j'), key('j')] {
        a.update(m);
    }
    out.push(("partial", a));

    let mut a = app(Options::default(), w, h);
    select(&mut a, "nginx-deployment");
    a.update(key('y'));
    a.update(code(KeyCode::Tab));
    for _ in 0..6 {
        a.update(key('j'));
    }
    out.push(("yaml", a));

    let mut a = app(Options::default(), w, h);
    select(&mut a, "nginx-deployment");
    a.update(key(' '));
    select(&mut a, "app-config");
    a.update(key(' '));
    a.update(key('a'));
    a.update(Msg::DryRunDone(vec![
        result(
            "ConfigMap default/app-config",
            true,
            "created (server dry run)",
        ),
        result(
            "Deployment default/nginx-deployment",
            true,
            "configured (server dry run)",
        ),
    ]));
    out.push(("apply-confirm", a));

    let mut a = app(Options::default(), w, h);
    a.update(key('p'));
    out.push(("prune", a));

    let mut a = app(Options::default(), w, h);
    select(&mut a, "nginx-deployment");
    a.update(key(' '));
    select(&mut a, "nginx");
    a.update(key(' '));
    a.update(key('D'));
    a.update(key('2'));
    out.push(("delete-confirm", a));

    let mut a = app(Options::default(), w, h);
    a.update(key('?'));
    out.push(("help", a));

    let mut a = app(Options::default(), w, h);
    for c in "/nginx".chars() {
        a.update(key(c));
    }
    out.push(("search", a));

    let mut a = app(Options::default(), w, h);
    select(&mut a, "db-credentials");
    a.update(key('l'));
    a.update(Msg::Applied(vec![
        result("ConfigMap default/app-config", true, "created"),
        result("Deployment default/nginx-deployment", true, "configured"),
        result(
            "Secret demo/db-credentials",
            false,
            "Secret \"db-credentials\" is invalid: data[tls.crt]: Invalid value",
        ),
    ]));
    a.update(Msg::Pruned(vec![result(
        "ConfigMap default/old-config",
        true,
        "pruned",
    )]));
    out.push(("log", a));

    let mut a = app(
        Options {
            color: false,
            ..Options::default()
        },
        w,
        h,
    );
    select(&mut a, "nginx-deployment");
    a.update(key(' '));
    out.push(("no-color", a));

    let mut a = app(Options::default(), 80, 24);
    select(&mut a, "nginx-deployment");
    out.push(("80x24", a));
    out
}

fn color(c: Color, default: &str) -> String {
    let named = |s: &str| s.to_string();
    match c {
        Color::Reset => default.to_string(),
        Color::Black => named("#1d1f21"),
        Color::Red => named("#e06c75"),
        Color::Green => named("#98c379"),
        Color::Yellow => named("#e5c07b"),
        Color::Blue => named("#61afef"),
        Color::Magenta => named("#c678dd"),
        Color::Cyan => named("#56b6c2"),
        Color::Gray => named("#abb2bf"),
        Color::DarkGray => named("#6b7280"),
        Color::LightRed => named("#ff8a8a"),
        Color::LightGreen => named("#b5e890"),
        Color::LightYellow => named("#f5d99b"),
        Color::LightBlue => named("#8cc8ff"),
        Color::LightMagenta => named("#e0a0f0"),
        Color::LightCyan => named("#8ee0ea"),
        Color::White => named("#ffffff"),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => format!("#{i:02x}{i:02x}{i:02x}"),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One SVG from a buffer: a rect per coloured background run, a text per
/// run of same-styled cells with every glyph placed on the grid.
fn to_svg(buf: &Buffer) -> String {
    let (w, h) = (buf.area.width, buf.area.height);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="DejaVu Sans Mono, DejaVu Sans" font-size="{FONT_SIZE}">"#,
        (w as f32 * CELL_W).ceil(),
        (h as f32 * CELL_H).ceil()
    );
    let _ = write!(svg, r#"<rect width="100%" height="100%" fill="{BG}"/>"#);
    for y in 0..h {
        let mut x = 0;
        while x < w {
            let cell = &buf[(x, y)];
            let reversed = cell.modifier.contains(Modifier::REVERSED);
            let (fg, bg) = if reversed {
                (color(cell.bg, BG), color(cell.fg, FG))
            } else {
                (color(cell.fg, FG), color(cell.bg, BG))
            };
            let m = cell.modifier;
            // A run: same colours and modifiers.
            let mut end = x + 1;
            while end < w {
                let c = &buf[(end, y)];
                if c.fg != cell.fg || c.bg != cell.bg || c.modifier != m {
                    break;
                }
                end += 1;
            }
            let x0 = x as f32 * CELL_W;
            let y0 = y as f32 * CELL_H;
            if bg != BG {
                let _ = write!(
                    svg,
                    r#"<rect x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{CELL_H}" fill="{bg}"/>"#,
                    (end - x) as f32 * CELL_W
                );
            }
            let mut xs = Vec::new();
            let mut text = String::new();
            for cx in x..end {
                let sym = buf[(cx, y)].symbol();
                if sym.trim().is_empty() {
                    continue;
                }
                for ch in sym.chars() {
                    xs.push(format!("{:.1}", cx as f32 * CELL_W));
                    text.push(ch);
                }
            }
            if !text.is_empty() {
                let mut attrs = String::new();
                if m.contains(Modifier::BOLD) {
                    attrs.push_str(r#" font-weight="bold""#);
                }
                if m.contains(Modifier::DIM) {
                    attrs.push_str(r#" opacity="0.6""#);
                }
                if m.contains(Modifier::UNDERLINED) {
                    attrs.push_str(r#" text-decoration="underline""#);
                } else if m.contains(Modifier::CROSSED_OUT) {
                    attrs.push_str(r#" text-decoration="line-through""#);
                }
                let _ = write!(
                    svg,
                    r#"<text x="{}" y="{:.1}" fill="{fg}"{attrs} xml:space="preserve">{}</text>"#,
                    xs.join(" "),
                    y0 + CELL_H * 0.75,
                    escape(&text)
                );
            }
            x = end;
        }
    }
    svg.push_str("</svg>\n");
    svg
}

fn font_dir() -> PathBuf {
    std::env::var_os("KAPPLY_FONT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/fonts/truetype/dejavu"))
}

fn to_png(svg: &str, path: &Path) -> anyhow::Result<()> {
    let mut opt = usvg::Options::default();
    let dir = font_dir();
    for f in [
        "DejaVuSansMono.ttf",
        "DejaVuSansMono-Bold.ttf",
        "DejaVuSans.ttf",
        "DejaVuSans-Bold.ttf",
    ] {
        let p = dir.join(f);
        let data = std::fs::read(&p)
            .with_context(|| format!("font {} (install fonts-dejavu-core)", p.display()))?;
        opt.fontdb_mut().load_font_data(data);
    }
    opt.font_family = "DejaVu Sans Mono".to_string();
    let tree = usvg::Tree::from_str(svg, &opt)?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).context("empty screenshot")?;
    resvg::render(
        &tree,
        tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    pixmap.save_png(path)?;
    Ok(())
}

mod live {
    use super::tui_fixture;
    use futures::future::BoxFuture;
    use kapply::ops::{ApplyItem, Engine, ObjectResult, Progress, Propagation};
    use kapply::plan::{ObjectAction, ObjectPlan, Plan};
    use std::sync::Mutex;
    use std::time::Duration;

    /// Answers from the fixture plan after a delay; applies and deletes
    /// change that plan so a reload shows the result.
    pub struct FixtureEngine {
        pub plan: Mutex<Plan>,
    }

    const DELAY: Duration = Duration::from_millis(400);

    fn results(
        objs: impl Iterator<Item = kapply::objref::ObjectRef>,
        message: &str,
    ) -> Vec<ObjectResult> {
        objs.map(|object| ObjectResult {
            object,
            ..super::tui_fixture::outcome(true, message)
        })
        .collect()
    }

    impl FixtureEngine {
        pub fn new() -> Self {
            FixtureEngine {
                plan: Mutex::new(tui_fixture::plan()),
            }
        }
        fn snapshot(&self) -> Plan {
            self.plan.lock().map(|p| p.clone()).unwrap_or_default()
        }
        fn remove(&self, objects: &[ObjectPlan]) {
            if let Ok(mut p) = self.plan.lock() {
                p.objects
                    .retain(|o| !objects.iter().any(|d| d.id() == o.id()));
            }
        }
    }

    impl Engine for FixtureEngine {
        fn load(
            &self,
            progress: tokio::sync::mpsc::UnboundedSender<Progress>,
        ) -> BoxFuture<'_, Result<Plan, String>> {
            Box::pin(async move {
                // To check that a panic leaves the terminal restored.
                if std::env::var_os("KAPPLY_FAKE_PANIC").is_some() {
                    tokio::time::sleep(DELAY).await;
                    panic!("KAPPLY_FAKE_PANIC is set");
                }
                let plan = self.snapshot();
                let total = plan.objects.len();
                for (i, o) in plan.objects.iter().enumerate() {
                    let _ = progress.send(Progress {
                        done: i + 1,
                        total,
                        lists: 0,
                        what: o.id().to_string(),
                    });
                    tokio::time::sleep(DELAY / 4).await;
                }
                Ok(plan)
            })
        }
        fn dry_run(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                tokio::time::sleep(DELAY).await;
                results(
                    items.iter().map(|i| i.plan.id()),
                    "configured (server dry run)",
                )
            })
        }
        fn apply(&self, items: Vec<ApplyItem>) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                tokio::time::sleep(DELAY).await;
                if let Ok(mut p) = self.plan.lock() {
                    for o in p.objects.iter_mut() {
                        if items.iter().any(|i| i.plan.id() == o.id()) {
                            o.action = ObjectAction::Unchanged;
                            o.fields.clear();
                            o.warnings.clear();
                        }
                    }
                }
                results(items.iter().map(|i| i.plan.id()), "configured")
            })
        }
        fn delete(
            &self,
            objects: Vec<ObjectPlan>,
            _propagation: Propagation,
        ) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                tokio::time::sleep(DELAY).await;
                self.remove(&objects);
                results(objects.iter().map(ObjectPlan::id), "deleted")
            })
        }
        fn prune(&self, objects: Vec<ObjectPlan>) -> BoxFuture<'_, Vec<ObjectResult>> {
            Box::pin(async move {
                tokio::time::sleep(DELAY).await;
                self.remove(&objects);
                results(objects.iter().map(ObjectPlan::id), "pruned")
            })
        }
    }
}

/// The TUI on the embedded server with the demo story, through the real engine.
async fn demo() -> anyhow::Result<()> {
    let demo = kapply::demo::Demo::start(None, None, false).await?;
    let engine = std::sync::Arc::new(demo.engine().await?);
    let mut signals = kapply::signals::Signals::new()?;
    let r = kapply::tui::run(engine, Options::from_env(), &mut signals).await;
    // What the cluster holds afterwards, for the end-to-end check.
    if let Some(out) = std::env::var_os("KAPPLY_DEMO_DUMP") {
        std::fs::write(
            out,
            serde_json::to_string_pretty(&demo.server.store().all())?,
        )?;
    }
    r.map(|_| ())
}

/// Frames of the real demo: the embedded server seeded with the story, the
/// plan loaded through the real cluster engine, the Deployment selected.
async fn demo_screens() -> anyhow::Result<Vec<(&'static str, App)>> {
    use kapply::ops::Engine;
    let demo = kapply::demo::Demo::start(None, None, false).await?;
    let engine = demo.engine().await?;
    // The engine connects as the TUI's first effect; here, by hand.
    engine.connect().await.map_err(|e| anyhow::anyhow!(e))?;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let plan = engine.load(tx).await.map_err(|e| anyhow::anyhow!(e))?;
    let mut out = Vec::new();
    // `\t`: Tab, into the field pane.
    for (name, object, w, h, keys) in [
        ("demo", "nginx-deployment", 132u16, 34u16, ""),
        ("demo-yaml", "nginx-deployment", 132, 34, "y"),
        ("demo-prune", "nginx-deployment", 132, 34, "p"),
        ("demo-drift", "settings", 132, 34, "\t"),
        ("demo-80x24", "nginx-deployment", 80, 24, "\t"),
    ] {
        // As `kapply demo` runs it: sources under the demo's directory.
        let mut app = App::new(Options {
            source_root: demo.manifests.parent().map(|p| p.display().to_string()),
            ..Options::default()
        });
        app.clock = || "14:02:37".to_string();
        app.conn.server = engine.server();
        app.conn.prune_scope = engine.prune_scope();
        app.update(Msg::Resize(w, h));
        app.start();
        app.update(Msg::Loaded(Ok(plan.clone())));
        select(&mut app, object);
        for c in keys.chars() {
            app.update(if c == '\t' {
                code(KeyCode::Tab)
            } else {
                key(c)
            });
        }
        out.push((name, app));
    }
    // `kapply demo --server-side`: the settings' conflict with kubectl
    // edit's LOG_LEVEL forced (T), then `a` and the server's dry run.
    for (name, confirm) in [
        ("demo-server-side", false),
        ("demo-server-side-confirm", true),
    ] {
        let manager = kapply::ssa::DEFAULT_FIELD_MANAGER.to_string();
        let mut app = App::new(Options {
            source_root: demo.manifests.parent().map(|p| p.display().to_string()),
            server_side: Some(kapply::tui::ServerSideMode {
                manager: manager.clone(),
                force: false,
            }),
            ..Options::default()
        });
        app.clock = || "14:02:37".to_string();
        app.conn.server = engine.server();
        app.conn.prune_scope = engine.prune_scope();
        app.update(Msg::Resize(132, 34));
        app.start();
        app.update(Msg::Loaded(Ok(plan.clone())));
        select(&mut app, "settings");
        app.update(code(KeyCode::Tab));
        app.update(key('T'));
        if confirm {
            for e in app.update(key('a')) {
                if let kapply::tui::Effect::ServerSideDryRun(items, _) = e {
                    let dry = engine.apply_server_side(items, manager.clone(), true).await;
                    app.update(Msg::ServerSideDryRunDone(dry));
                }
            }
        }
        out.push((name, app));
    }
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    if std::env::args().any(|a| a == "--demo") {
        let rt = tokio::runtime::Runtime::new()?;
        return rt.block_on(demo());
    }
    if std::env::args().any(|a| a == "--live") {
        let rt = tokio::runtime::Runtime::new()?;
        let engine = std::sync::Arc::new(live::FixtureEngine::new());
        return rt.block_on(async {
            let mut signals = kapply::signals::Signals::new()?;
            kapply::tui::run(engine, Options::from_env(), &mut signals)
                .await
                .map(|_| ())
        });
    }
    let dir = PathBuf::from("screenshots");
    std::fs::create_dir_all(&dir)?;
    let rt = tokio::runtime::Runtime::new()?;
    let mut all = rt.block_on(demo_screens())?;
    all.extend(screens());
    for (name, app) in all {
        let (w, h) = (app.size.width, app.size.height);
        let mut term = Terminal::new(TestBackend::new(w, h))?;
        term.draw(|f| f.render_widget(&app, f.area()))?;
        let svg = to_svg(term.backend().buffer());
        let svg_path = dir.join(format!("{name}.svg"));
        std::fs::write(&svg_path, &svg)?;
        let png_path = dir.join(format!("{name}.png"));
        to_png(&svg, &png_path)?;
        println!("{} {}", svg_path.display(), png_path.display());
    }
    Ok(())
}
