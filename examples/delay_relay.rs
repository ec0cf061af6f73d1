//! A TCP relay that holds every byte for a while each way, to measure
//! kapply against a distant API server where the kernel has no `netem`
//! (`tc qdisc ... netem delay` needs the sch_netem module):
//!
//! `cargo run --release --example delay_relay -- LISTEN_PORT UPSTREAM DELAY_MS`
//!
//! forwards connections made to 127.0.0.1:LISTEN_PORT to UPSTREAM
//! (host:port), each chunk read delivered DELAY_MS after it arrived, in
//! order, in both directions: a round trip costs 2 x DELAY_MS, and opening
//! a connection costs one round trip too (the TCP handshake a real link
//! would add). Bandwidth is not limited. Prints `ready` once listening;
//! runs until killed.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [port, upstream, delay] = args.as_slice() else {
        anyhow::bail!("usage: delay_relay LISTEN_PORT UPSTREAM_HOST:PORT DELAY_MS");
    };
    let delay = Duration::from_millis(delay.parse()?);
    let listener = TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
    println!("ready");
    loop {
        let (client, _) = listener.accept().await?;
        let upstream = upstream.clone();
        tokio::spawn(async move {
            // The handshake's round trip.
            tokio::time::sleep(2 * delay).await;
            let Ok(server) = TcpStream::connect(&upstream).await else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::join!(pump(cr, sw, delay), pump(sr, cw, delay));
        });
    }
}

/// Copy `from` to `to`, each chunk written `delay` after it was read; the
/// end of the stream is passed on the same way.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from.read(&mut buf).await.unwrap_or(0);
            // An empty chunk is the end of the stream.
            if tx
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .is_err()
                || n == 0
            {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if chunk.is_empty() || to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
