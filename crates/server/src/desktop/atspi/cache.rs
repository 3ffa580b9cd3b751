//! Trees kept in memory while their application says nothing changed.
//!
//! The server registers for AT-SPI's object and window events
//! (children-changed, property-change, state-changed, text-changed,
//! bounds-changed, defunct, window create and destroy) and counts, per
//! application, every event it sends: its *generation*. A tree read from
//! the bus is kept with the generation it was read at, and with the
//! display's own facts it was read for (process, title, place; a window
//! that moves sends no event, so its place is part of the key). A second
//! read of that window is answered from memory only when the application's
//! generation is still the same *now*: the watcher pings the application
//! (`org.freedesktop.DBus.Peer.Ping`, answered by every D-Bus library)
//! and answers with the generation once the ping's reply has come through
//! the same stream as the events. The bus keeps one sender's messages in
//! order, so every event the application sent before it answered has been
//! counted by then. An event between a preview and an execution therefore
//! makes the execution read the tree again, and the revision that binds
//! the action is the tree's as it is.
//!
//! The registry's own events (an application coming or going) and a queue
//! that overflowed count for every application. A toolkit this server has
//! not mapped, or an application that does not answer the ping, is always
//! read from the bus.

use std::collections::HashMap;
use std::num::NonZeroU32;

use atspi::AccessibilityConnection;
use atspi::events::{ObjectEvents, WindowEvents};
use atspi::zbus::message::Type;
use atspi::zbus::{self, Message, MessageStream};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::{Bounds, Toolkit, Tree};

/// How many messages the connection queues for the watcher: far more than
/// any application sends between two of the watcher's turns.
const QUEUE: usize = 1 << 16;

/// The generations of one application as of a barrier: its own and the
/// registry's (which counts for every application).
pub(super) type Generation = (u64, u64);

/// A request to the watcher: the generation of an application once every
/// event it sent before answering a ping has been counted; `None` when it
/// did not answer.
struct Barrier {
    app: String,
    reply: oneshot::Sender<Option<Generation>>,
}

/// The watcher's handle, and the trees kept.
pub(super) struct Cache {
    barriers: mpsc::UnboundedSender<Barrier>,
    kept: std::sync::Mutex<HashMap<Key, Kept>>,
}

/// What a kept tree was read for: the process, the window's title and
/// place as the display shows them.
type Key = (u32, String, Bounds);

struct Kept {
    app: String,
    generation: Generation,
    tree: Tree,
}

impl Cache {
    /// Registers for the events and starts the watcher on the current
    /// runtime; `None` when the registry refuses the registration (trees
    /// are then always read from the bus).
    pub(super) async fn start(bus: &AccessibilityConnection) -> Option<Self> {
        let mut conn = bus.connection().clone();
        conn.set_max_queued(QUEUE);
        // The stream first, so nothing sent after the registration is lost.
        let stream = MessageStream::from(&conn);
        bus.register_event::<ObjectEvents>().await.ok()?;
        bus.register_event::<WindowEvents>().await.ok()?;
        let registry = zbus::fdo::DBusProxy::new(&conn)
            .await
            .ok()?
            .get_name_owner(zbus::names::BusName::try_from("org.a11y.atspi.Registry").ok()?)
            .await
            .ok()
            .map(|owner| owner.to_string());
        let (barriers, requests) = mpsc::unbounded_channel();
        tokio::spawn(watch(conn, stream, requests, registry));
        Some(Self {
            barriers,
            kept: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The generation of `app` now (see the module's doc).
    pub(super) async fn generation(&self, app: &str) -> Option<Generation> {
        let (reply, answer) = oneshot::channel();
        self.barriers
            .send(Barrier {
                app: app.to_owned(),
                reply,
            })
            .ok()?;
        answer.await.ok().flatten()
    }

    /// The tree kept for this window, if its application has sent no event
    /// since it was read.
    pub(super) async fn current(&self, pid: u32, title: &str, bounds: Bounds) -> Option<Tree> {
        let key = (pid, title.to_owned(), bounds);
        let (app, generation) = {
            let kept = self.kept.lock().ok()?;
            let entry = kept.get(&key)?;
            (entry.app.clone(), entry.generation)
        };
        if self.generation(&app).await? != generation {
            return None;
        }
        let kept = self.kept.lock().ok()?;
        kept.get(&key)
            .filter(|entry| entry.generation == generation)
            .map(|entry| entry.tree.clone())
    }

    /// Keeps `tree`, read at `generation` of `app`, for this window; a
    /// toolkit not mapped is never kept.
    pub(super) fn keep(
        &self,
        (pid, title, bounds): (u32, &str, Bounds),
        app: &str,
        generation: Generation,
        tree: &Tree,
    ) {
        if matches!(tree.toolkit, Toolkit::Other(_)) {
            return;
        }
        if let Ok(mut kept) = self.kept.lock() {
            // A bound on memory: windows of the past are let go.
            if kept.len() >= 64 {
                kept.clear();
            }
            kept.insert(
                (pid, title.to_owned(), bounds),
                Kept {
                    app: app.to_owned(),
                    generation,
                    tree: tree.clone(),
                },
            );
        }
    }
}

/// The watcher: counts every event by its sender, and answers barriers
/// when their ping's reply comes through the stream.
async fn watch(
    conn: zbus::Connection,
    mut stream: MessageStream,
    mut requests: mpsc::UnboundedReceiver<Barrier>,
    registry: Option<String>,
) {
    let mut generations: HashMap<String, u64> = HashMap::new();
    let mut everyone: u64 = 0;
    let mut pending: HashMap<NonZeroU32, Barrier> = HashMap::new();
    loop {
        tokio::select! {
            request = requests.recv() => {
                let Some(request) = request else { return };
                let ping = Message::method_call("/", "Ping")
                    .and_then(|m| m.interface("org.freedesktop.DBus.Peer"))
                    .and_then(|m| m.destination(request.app.as_str()))
                    .and_then(|m| m.build(&()));
                match ping {
                    Ok(ping) => {
                        let serial = ping.primary_header().serial_num();
                        pending.insert(serial, request);
                        if conn.send(&ping).await.is_err()
                            && let Some(request) = pending.remove(&serial)
                        {
                            let _ = request.reply.send(None);
                        }
                    }
                    Err(_) => {
                        let _ = request.reply.send(None);
                    }
                }
            }
            message = stream.next() => {
                let Some(message) = message else { return };
                let Ok(message) = message else {
                    // A message lost or unreadable: nothing kept is known
                    // to be current.
                    everyone += 1;
                    continue;
                };
                let header = message.header();
                match message.message_type() {
                    Type::Signal => {
                        let is_event = header
                            .interface()
                            .is_some_and(|i| i.as_str().starts_with("org.a11y.atspi.Event."));
                        let sender = header.sender().map(|s| s.to_string());
                        if !is_event {
                            continue;
                        }
                        match sender {
                            Some(sender) if registry.as_deref() == Some(sender.as_str()) => {
                                everyone += 1;
                            }
                            Some(sender) => *generations.entry(sender).or_default() += 1,
                            None => everyone += 1,
                        }
                    }
                    Type::MethodReturn | Type::Error => {
                        let Some(serial) = header.reply_serial() else { continue };
                        let Some(request) = pending.remove(&serial) else { continue };
                        let answered = message.message_type() == Type::MethodReturn
                            && header.sender().is_some_and(|s| s.as_str() == request.app);
                        let generation = generations.get(&request.app).copied().unwrap_or(0);
                        let _ = request.reply.send(answered.then_some((generation, everyone)));
                    }
                    Type::MethodCall => {}
                }
            }
        }
    }
}
