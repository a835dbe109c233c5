//! Running a server on its own thread, for tests and for programs that
//! embed one: start it, read its connection reports, stop it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use cr_serve::ConnectionReport;

use super::Server;
use crate::error::AppError;

/// A server running on a thread; dropping the handle stops it.
pub struct ServerHandle {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    reports: Receiver<ConnectionReport>,
    thread: Option<JoinHandle<Result<(), AppError>>>,
}

impl ServerHandle {
    /// Runs `server` on a new thread.
    pub fn spawn(mut server: Server) -> Result<ServerHandle, AppError> {
        let local = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let (sender, reports) = mpsc::channel();
        let thread_stop = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name("cr-server".into())
            .spawn(move || {
                server.run(&thread_stop, |report| {
                    // The receiver may be gone; the report is then unwanted.
                    let _ = sender.send(report);
                })
            })
            .map_err(|e| AppError::io("starting the server thread", e))?;
        Ok(ServerHandle {
            local,
            stop,
            reports,
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The next connection report, waiting at most `timeout` for one.
    pub fn next_report(&self, timeout: Duration) -> Result<ConnectionReport, AppError> {
        self.reports.recv_timeout(timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => {
                AppError::Timeout(format!("no connection ended within {timeout:?}"))
            }
            RecvTimeoutError::Disconnected => AppError::Invalid("the server stopped".into()),
        })
    }

    /// Stops the server and returns how its loop ended.
    pub fn stop(mut self) -> Result<(), AppError> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<(), AppError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(AppError::Invalid("the server thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}
