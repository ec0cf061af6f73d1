//! Serve the embedded API server until killed:
//! `cargo run --example serve -- KUBECONFIG [PORT]`. With `KAPPLY_TRACE=1`
//! every request is printed (as JSON lines on stderr).

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let kubeconfig = args.next().unwrap_or_else(|| "kapply.kubeconfig".into());
    let port = args.next().and_then(|p| p.parse().ok());
    let trace = std::env::var_os("KAPPLY_TRACE").is_some();
    let server = kapply::server::start(kapply::server::ServerOptions {
        port,
        // Recorded requests are only read to trace them.
        forget_requests: !trace,
    })
    .await?;
    server.write_kubeconfig(std::path::Path::new(&kubeconfig))?;
    println!("{} {kubeconfig}", server.url());
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                if trace {
                    for r in server.requests() {
                        eprintln!("{}", serde_json::to_string(&r)?);
                    }
                    server.clear_requests();
                }
            }
        }
    }
    server.shutdown();
    Ok(())
}
