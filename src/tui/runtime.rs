//! The runtime: owns the terminal, crossterm's event stream and the message
//! channel; performs effects on tokio tasks so the UI never waits on the network.

use super::app::{App, Effect, Msg, Options};
use crate::ops::Engine;
use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event, EventStream, KeyEventKind};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::{Write, stdout};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Whether the terminal is in TUI mode, so restoring happens once.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Put the terminal back: raw mode off, main screen, no mouse capture,
/// cursor shown. Safe to call more than once (drop and panic hook).
fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = stdout();
        let _ = crossterm::execute!(
            out,
            DisableMouseCapture,
            LeaveAlternateScreen,
            crossterm::cursor::Show
        );
        let _ = disable_raw_mode();
        let _ = out.flush();
    }
}

/// The one RAII guard: entering sets up the terminal and a panic hook that
/// restores it before the panic message prints; dropping restores it.
pub struct TerminalGuard {
    _private: (),
}

impl TerminalGuard {
    pub fn enter(mouse: bool) -> std::io::Result<TerminalGuard> {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            hook(info);
        }));
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let guard = TerminalGuard { _private: () };
        let mut out = stdout();
        crossterm::execute!(out, EnterAlternateScreen)?;
        if mouse {
            crossterm::execute!(out, EnableMouseCapture)?;
        }
        Ok(guard)
    }
}

impl TerminalGuard {
    /// Give the terminal back for a while (an editor runs in it): main
    /// screen, cooked mode, cursor shown, mouse released, as on exit.
    pub fn suspend(&self) {
        restore();
    }

    /// Take the terminal again after [`TerminalGuard::suspend`].
    pub fn resume(&self, mouse: bool) -> std::io::Result<()> {
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = stdout();
        crossterm::execute!(out, EnterAlternateScreen)?;
        if mouse {
            crossterm::execute!(out, EnableMouseCapture)?;
        }
        Ok(())
    }
}

/// The editor the user chose: `$VISUAL`, else `$EDITOR`, else `vi` (as git
/// and kubectl edit choose it).
pub fn editor_from(visual: Option<&str>, editor: Option<&str>) -> String {
    [visual, editor]
        .into_iter()
        .flatten()
        .map(str::trim)
        .find(|e| !e.is_empty())
        .unwrap_or("vi")
        .to_string()
}

/// Run the editor on `file` at `line` and wait for it. The editor's
/// text goes through `sh -c`, as git runs it, so `code --wait` or
/// `emacs -nw` work; `+LINE` is understood by vi, vim, nano, emacs, micro.
async fn run_editor(file: &str, line: u32) -> Result<(), String> {
    let editor = editor_from(
        std::env::var("VISUAL").ok().as_deref(),
        std::env::var("EDITOR").ok().as_deref(),
    );
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg(&editor)
        .arg(format!("+{line}"))
        .arg(file)
        .status()
        .await
        .map_err(|e| format!("cannot run `{editor}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{editor}` on {file} ended with {status}"))
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// How the TUI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The user quit.
    Quit,
    /// A signal ended it (its number); the terminal has been restored.
    Signal(i32),
}

/// Run the TUI until the user quits or a signal (SIGTERM, SIGHUP, SIGINT,
/// SIGQUIT) ends it; either way the terminal is restored before this
/// returns. Starts at once, with the manifests listed while the engine
/// connects and loads the plan; quitting does not wait for the network
/// (every task still running is aborted).
pub async fn run(
    engine: Arc<dyn Engine>,
    opts: Options,
    signals: &mut crate::signals::Signals,
) -> anyhow::Result<Ended> {
    let guard = TerminalGuard::enter(opts.mouse)?;
    let mouse = opts.mouse;
    // A frame reaches the terminal in one write (ratatui flushes after
    // each): a terminal, or tmux, never shows one half drawn.
    let out = std::io::BufWriter::with_capacity(1 << 16, stdout());
    let mut terminal = Terminal::new(CrosstermBackend::new(out))?;
    terminal.clear()?;
    let mut app = App::new(opts);
    app.conn.server = engine.server();
    app.conn.prune_scope = engine.prune_scope();
    let size = terminal.size()?;
    app.update(Msg::Resize(size.width, size.height));
    // Err: a task panicked (the hook has restored the terminal): stop.
    let (tx, mut rx) = mpsc::unbounded_channel::<Result<Msg, String>>();
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(120));
    let mut tasks = Tasks::default();
    for e in app.start() {
        tasks.spawn(e, &engine, &tx);
    }
    let mut redraw = true;
    loop {
        if redraw {
            terminal.draw(|f| f.render_widget(&app, f.area()))?;
        }
        let msg = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => Msg::Key(k),
                Some(Ok(Event::Mouse(m))) => Msg::Mouse(m),
                Some(Ok(Event::Resize(w, h))) => Msg::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(Ended::Quit),
            },
            n = signals.recv() => return Ok(Ended::Signal(n)),
            Some(m) = rx.recv() => match m {
                Ok(m) => m,
                Err(e) => anyhow::bail!("kapply: a background task failed: {e}"),
            },
            _ = tick.tick() => Msg::Tick,
        };
        // A tick only moves the spinner: redraw then only if one shows.
        redraw = !matches!(msg, Msg::Tick) || app.animating();
        let mut msg = Some(msg);
        let mut queued = 0;
        while let Some(m) = msg.take() {
            for effect in app.update(m) {
                match effect {
                    Effect::Quit => return Ok(Ended::Quit),
                    Effect::Edit { file, line } => {
                        // crossterm's reader would take the editor's keys:
                        // it stops while the editor has the terminal.
                        drop(events);
                        guard.suspend();
                        let done = run_editor(&file, line).await;
                        guard.resume(mouse)?;
                        // A fresh terminal draws the whole frame next (ratatui's
                        // clear() asks the terminal where its cursor is: no
                        // answer is read before the event stream is back).
                        crossterm::execute!(
                            stdout(),
                            crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
                        )?;
                        terminal = Terminal::new(CrosstermBackend::new(
                            std::io::BufWriter::with_capacity(1 << 16, stdout()),
                        ))?;
                        events = EventStream::new();
                        let _ = tx.send(Ok(Msg::Edited(done)));
                        redraw = true;
                    }
                    effect => tasks.spawn(effect, &engine, &tx),
                }
            }
            // What the tasks have sent meanwhile (a load's progress and
            // rows) goes into the same frame: one draw, not one each.
            if queued < MAX_QUEUED
                && let Ok(m) = rx.try_recv()
            {
                queued += 1;
                redraw = true;
                msg =
                    Some(m.map_err(|e| anyhow::anyhow!("kapply: a background task failed: {e}"))?);
            }
        }
    }
}

/// Messages of the tasks taken into one frame at most (then keys get
/// their turn).
const MAX_QUEUED: usize = 64;

/// The effects under way. Dropping it (the TUI ends) aborts them: a
/// request the server never answers must not keep kapply from exiting.
#[derive(Default)]
struct Tasks {
    all: Vec<tokio::task::AbortHandle>,
    /// The watch under way (`Effect::Watch`): the next one replaces it.
    watch: Vec<tokio::task::AbortHandle>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.all {
            t.abort();
        }
    }
}

impl Tasks {
    /// Perform one effect on a task; its result comes back as a message.
    fn spawn(
        &mut self,
        effect: Effect,
        engine: &Arc<dyn Engine>,
        tx: &mpsc::UnboundedSender<Result<Msg, String>>,
    ) {
        self.all.retain(|t| !t.is_finished());
        let is_watch = matches!(effect, Effect::Watch(_));
        if is_watch {
            // It follows what an older load read: its reports would be dropped.
            for t in self.watch.drain(..) {
                t.abort();
            }
        }
        let engine = Arc::clone(engine);
        let tx = tx.clone();
        let (mtx, mut mrx) = mpsc::unbounded_channel();
        let ftx = tx.clone();
        let forward = tokio::spawn(async move {
            while let Some(m) = mrx.recv().await {
                let _ = ftx.send(Ok(m));
            }
        });
        let work = tokio::spawn(perform(effect, engine, mtx));
        if is_watch {
            self.watch = vec![forward.abort_handle(), work.abort_handle()];
        }
        self.all.push(forward.abort_handle());
        self.all.push(work.abort_handle());
        let watch = tokio::spawn(async move {
            // The receivers are gone only when the app has quit.
            let done = work.await;
            // What the effect sent on the way (a load's rows) goes first:
            // the forwarder ends once the effect is done and it has passed
            // everything on.
            let _ = forward.await;
            match done {
                Ok(Some(msg)) => {
                    let _ = tx.send(Ok(msg));
                }
                Ok(None) => {}
                Err(e) if e.is_cancelled() => {}
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                }
            }
        });
        if is_watch {
            self.watch.push(watch.abort_handle());
        }
        self.all.push(watch.abort_handle());
    }
}

/// Run one effect against the engine and return the message that reports
/// its result (`None` for `Quit`). Load progress is sent on `tx` as it comes.
pub async fn perform(
    effect: Effect,
    engine: Arc<dyn Engine>,
    tx: mpsc::UnboundedSender<Msg>,
) -> Option<Msg> {
    Some(match effect {
        Effect::Connect => Msg::Connected(engine.connect().await),
        Effect::ReadManifests => Msg::Manifests(engine.manifests().await),
        Effect::Load => {
            let (ptx, mut prx) = mpsc::unbounded_channel();
            let (rtx, mut rrx) = mpsc::unbounded_channel();
            let load = engine.load_rows(ptx, rtx);
            tokio::pin!(load);
            // Progress and rows are passed on as they come, and all of them
            // before the result: the last rows must not trail it.
            let result = loop {
                tokio::select! {
                    biased;
                    Some(r) = rrx.recv() => {
                        let _ = tx.send(Msg::Rows(r));
                    }
                    Some(p) = prx.recv() => {
                        let _ = tx.send(Msg::Progress(p));
                    }
                    r = &mut load => break r,
                }
            };
            while let Ok(r) = rrx.try_recv() {
                let _ = tx.send(Msg::Rows(r));
            }
            Msg::Loaded(result)
        }
        Effect::DryRun(items) => {
            let total = items.len();
            let (etx, erx) = mpsc::unbounded_channel();
            let work = engine.dry_run_reporting(crate::ops::Write::Apply(items), etx);
            Msg::DryRunDone(counting(work, erx, &tx, total, dry_run_progress).await)
        }
        Effect::ServerSideDryRun(items, manager) => {
            Msg::ServerSideDryRunDone(engine.apply_server_side(items, manager, true).await)
        }
        Effect::ServerSideApply(items, manager) => {
            Msg::Applied(engine.apply_server_side(items, manager, false).await)
        }
        Effect::Apply(items) => {
            Msg::Applied(writing(&engine, crate::ops::Write::Apply(items), &tx).await)
        }
        Effect::Delete(objs, prop) => {
            Msg::Deleted(writing(&engine, crate::ops::Write::Delete(objs, prop), &tx).await)
        }
        Effect::Prune(objs) => {
            Msg::Pruned(writing(&engine, crate::ops::Write::Prune(objs), &tx).await)
        }
        Effect::Recreate(items) => {
            Msg::Recreated(writing(&engine, crate::ops::Write::Recreate(items), &tx).await)
        }
        Effect::PruneDryRun(objs) => {
            let total = objs.len();
            let (etx, erx) = mpsc::unbounded_channel();
            let work = engine.dry_run_reporting(crate::ops::Write::Prune(objs), etx);
            Msg::PruneDryRunDone(counting(work, erx, &tx, total, dry_run_progress).await)
        }
        Effect::ExportTarget(obj, own_file) => {
            let target = engine.export_target(&obj, own_file.as_deref());
            Msg::ExportAsk(obj, target)
        }
        Effect::Export(obj, path, overwrite) => {
            let done = engine.export(obj.clone(), path, overwrite).await;
            Msg::Exported(obj, done)
        }
        Effect::Watch(n) => {
            let (ltx, mut lrx) = mpsc::unbounded_channel();
            let watch = engine.watch(ltx);
            tokio::pin!(watch);
            let result = loop {
                tokio::select! {
                    biased;
                    Some(e) = lrx.recv() => {
                        let _ = tx.send(Msg::Live(n, e));
                    }
                    r = &mut watch => break r,
                }
            };
            while let Ok(e) = lrx.try_recv() {
                let _ = tx.send(Msg::Live(n, e));
            }
            Msg::LiveStopped(
                n,
                result
                    .err()
                    .unwrap_or_else(|| "the watch ended".to_string()),
            )
        }
        // Run by the loop, which owns the terminal.
        Effect::Quit | Effect::Edit { .. } => return None,
    })
}

/// Run writes, sending `Msg::WriteProgress` as objects are done (many
/// marked objects take a while against a distant server).
async fn writing(
    engine: &Arc<dyn Engine>,
    write: crate::ops::Write,
    tx: &mpsc::UnboundedSender<Msg>,
) -> Vec<crate::ops::ObjectResult> {
    let total = write.len();
    let (etx, erx) = mpsc::unbounded_channel();
    let work = engine.write_reporting(write, etx);
    counting(work, erx, tx, total, |done, total| Msg::WriteProgress {
        done,
        total,
    })
    .await
}

fn dry_run_progress(done: usize, total: usize) -> Msg {
    Msg::DryRunProgress { done, total }
}

/// Await `work`, sending `progress(done, total)` as each object's
/// [`crate::ops::WriteEvent::Done`] arrives on `events`.
async fn counting(
    work: futures::future::BoxFuture<'_, Vec<crate::ops::ObjectResult>>,
    mut events: mpsc::UnboundedReceiver<crate::ops::WriteEvent>,
    tx: &mpsc::UnboundedSender<Msg>,
    total: usize,
    progress: fn(usize, usize) -> Msg,
) -> Vec<crate::ops::ObjectResult> {
    tokio::pin!(work);
    let mut done = 0;
    loop {
        tokio::select! {
            biased;
            Some(e) = events.recv() => {
                if matches!(e, crate::ops::WriteEvent::Done(..)) {
                    done += 1;
                    let _ = tx.send(progress(done, total));
                }
            }
            results = &mut work => return results,
        }
    }
}
