use std::time::Duration;

use pretty_assertions::assert_eq;
use tokio::sync::oneshot::error::TryRecvError;

use super::ChangeSignal;
use crate::source::SourceChange;

#[tokio::test]
async fn an_announcement_is_answered_once_the_watcher_comes_back() {
    let signal = ChangeSignal::default();
    // Announced before anyone waits: kept, not lost.
    let mut first = signal.announce();
    let mut second = signal.announce();
    assert_eq!(signal.next().await, SourceChange::ToolsChanged);
    // Being relisted: not answered yet.
    assert_eq!(first.try_recv(), Err(TryRecvError::Empty));
    let waiting = tokio::time::timeout(Duration::from_millis(50), signal.next()).await;
    assert!(waiting.is_err(), "nothing more was announced");
    // The watcher came back: both are answered, in one relisting.
    assert_eq!(first.try_recv(), Ok(()));
    assert_eq!(second.try_recv(), Ok(()));
}

#[tokio::test]
async fn closing_ends_the_watch_and_answers_whoever_waits() {
    let signal = ChangeSignal::default();
    let mut pending = signal.announce();
    signal.close();
    assert_eq!(signal.next().await, SourceChange::Closed);
    assert_eq!(pending.try_recv(), Err(TryRecvError::Closed));
    let mut late = signal.announce();
    assert_eq!(late.try_recv(), Err(TryRecvError::Closed));
}
