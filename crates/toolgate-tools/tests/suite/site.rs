//! A local HTTP/1.1 server with canned answers, for the tools that reach
//! the web (the `web` built-in, JavaScript `fetch`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One canned answer.
#[derive(Clone)]
pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
    pub(crate) delay: Duration,
}

impl Page {
    pub(crate) fn new(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }
}

/// A local HTTP/1.1 server answering by path, recording each request target.
pub(crate) struct Site {
    pub(crate) base: String,
    requests: Arc<Mutex<Vec<String>>>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Site {
    pub(crate) async fn start(routes: Vec<(&'static str, Page)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let seen_heads = Arc::clone(&heads);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let routes = routes.clone();
                let seen = Arc::clone(&seen);
                let seen_heads = Arc::clone(&seen_heads);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buffer = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(read) => head.extend_from_slice(&buffer[..read]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    seen_heads.lock().unwrap().push(head.clone());
                    let target = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    seen.lock().unwrap().push(target.clone());
                    let path = target.split('?').next().unwrap_or("/");
                    let page = routes
                        .iter()
                        .find(|(route, _)| *route == path)
                        .map(|(_, page)| page.clone())
                        .unwrap_or_else(|| Page::new(404, "text/plain", "not found"));
                    tokio::time::sleep(page.delay).await;
                    let mut response = format!(
                        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                        page.status,
                        page.body.len()
                    );
                    for (name, value) in &page.headers {
                        response.push_str(&format!("{name}: {value}\r\n"));
                    }
                    response.push_str("\r\n");
                    response.push_str(&page.body);
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self {
            base,
            requests,
            heads,
        }
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// Each request's head (request line and headers), as received.
    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}
