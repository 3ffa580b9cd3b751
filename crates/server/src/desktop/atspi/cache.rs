//! Trees kept in memory while their application says nothing changed.
//!
//! The server registers for AT-SPI's object and window events
//! (children-changed, property-change, state-changed, text-changed,
//! bounds-changed, defunct, window create and destroy) and counts, per
//! application, every event it sends: its *generation*. A tree read from
//! the bus is kept with the generation it was read at, and with the
//! display's own facts it was read for (process, title, place; a window
//! that moves sends no event, so its place is part of the key). A second
//! read of that window is answered from memory only when every event the
//! application has sent since *now* leaves the tree as it was: the
//! watcher pings the application (`org.freedesktop.DBus.Peer.Ping`,
//! answered by every D-Bus library) and answers with the generation, and
//! the events since the one asked for, once the ping's reply has come
//! through the same stream as the events. The bus keeps one sender's
//! messages in order, so every event the application sent before it
//! answered has been counted by then. An event between a preview and an
//! execution that changes the tree therefore makes the execution read it
//! again, and the revision that binds the action is the tree's as it is.
//!
//! Not every event changes a tree: the watcher keeps each application's
//! latest [`LOG`] events, and [`super::events`] judges them (gedit
//! re-announces its check items' states whenever it is read, its
//! bridge's helper objects outside the window come and go, and a node
//! that announces a state or its bounds is asked again). When the log no
//! longer holds every event since the tree was read, it is read again.
//!
//! The registry's own events (an application coming or going) and a queue
//! that overflowed count for every application. A browser (whose events
//! come late, see [`super::Toolkit::events_keep_pace`]), a toolkit this server
//! has not mapped, or an application that does not answer the ping, is
//! always read from the bus.

use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;

use atspi::AccessibilityConnection;
use atspi::events::{ObjectEvents, WindowEvents};
use atspi::zbus::message::Type;
use atspi::zbus::{self, Message, MessageStream};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};

use super::events::{Change, Event, LONG_OBJECT, MAX_OBJECT, Objects, Verdict, judge};
use super::{Bounds, Tree};

/// How many messages the connection queues for the watcher: far more than
/// any application sends between two of the watcher's turns.
const QUEUE: usize = 1 << 16;

/// How many of an application's latest events the watcher keeps (each
/// with an object path of [`MAX_OBJECT`] bytes at most).
const LOG: usize = 2048;

/// How many applications' events the watcher keeps apart; past it, every
/// log is let go and every kept tree is read again (an application that
/// opens connection after connection cannot make the server hold more).
const LOGS: usize = 64;

/// The generations of one application as of a barrier: its own and the
/// registry's (which counts for every application).
pub(super) type Generation = (u64, u64);

/// A request to the watcher: the generation of an application once every
/// event it sent before answering a ping has been counted, with its
/// events since `since` when asked and still logged; `None` when it did
/// not answer.
struct Barrier {
    app: String,
    since: Option<u64>,
    reply: oneshot::Sender<Option<Answer>>,
}

/// The watcher's answer to a barrier.
struct Answer {
    generation: Generation,
    /// The events since the generation asked for, in order; `None` when
    /// some are no longer logged (or none was asked for).
    events: Option<Vec<Event>>,
}

/// An application's events as the watcher counts and logs them.
#[derive(Default)]
struct Log {
    count: u64,
    latest: VecDeque<Event>,
}

impl Log {
    fn push(&mut self, object: &str, change: Change) {
        let object = if object.len() > MAX_OBJECT {
            LONG_OBJECT.to_owned()
        } else {
            object.to_owned()
        };
        self.count += 1;
        if self.latest.len() >= LOG {
            self.latest.pop_front();
        }
        self.latest.push_back(Event {
            seq: self.count,
            object,
            change,
        });
    }

    /// The events after the `since`-th, when every one is still logged.
    fn since(&self, since: u64) -> Option<Vec<Event>> {
        let first = self.latest.front().map_or(self.count + 1, |e| e.seq);
        (since + 1 >= first || since >= self.count).then(|| {
            self.latest
                .iter()
                .filter(|e| e.seq > since)
                .cloned()
                .collect()
        })
    }
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
    objects: Objects,
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

    async fn barrier(&self, app: &str, since: Option<u64>) -> Option<Answer> {
        let (reply, answer) = oneshot::channel();
        self.barriers
            .send(Barrier {
                app: app.to_owned(),
                since,
                reply,
            })
            .ok()?;
        answer.await.ok().flatten()
    }

    /// The generation of `app` now (see the module's doc).
    pub(super) async fn generation(&self, app: &str) -> Option<Generation> {
        self.barrier(app, None).await.map(|a| a.generation)
    }

    /// The tree kept for this window, if every event its application has
    /// sent since it was read leaves it as it was (and none came from the
    /// registry), the nodes whose announced states differ from the tree's,
    /// or that announced their bounds, asked again on `conn`. The tree is
    /// then kept as of now.
    pub(super) async fn current(
        &self,
        conn: &zbus::Connection,
        pid: u32,
        title: &str,
        bounds: Bounds,
    ) -> Option<Tree> {
        let key = (pid, title.to_owned(), bounds);
        let (app, generation) = {
            let kept = self.kept.lock().ok()?;
            let entry = kept.get(&key)?;
            (entry.app.clone(), entry.generation)
        };
        let answer = self.barrier(&app, Some(generation.0)).await?;
        if answer.generation.1 != generation.1 {
            return None;
        }
        let events = answer.events?;
        let (verdict, tree) = {
            let kept = self.kept.lock().ok()?;
            let entry = kept
                .get(&key)
                .filter(|entry| entry.generation == generation)?;
            let verdict = judge(&entry.tree, &entry.objects, &events);
            (verdict, entry.tree.clone())
        };
        match verdict {
            Verdict::Unchanged => {}
            Verdict::Changed => return None,
            Verdict::Ask(nodes) => {
                let (bounds_of, held_tree, app) = (tree.toolkit.bounds_of(), &tree, app.as_str());
                let asked = nodes.iter().map(|(object, index)| async move {
                    let held = held_tree.nodes.get(*index)?;
                    let (states, extents) = answers_of(conn, app, object).await?;
                    // What a walk would read of it now.
                    let bounds = if bounds_of.asks(&states) {
                        extents
                    } else {
                        (0, 0, 0, 0)
                    };
                    (states == held.states && bounds == held.bounds).then_some(())
                });
                futures_util::future::join_all(asked)
                    .await
                    .into_iter()
                    .collect::<Option<Vec<()>>>()?;
            }
        }
        let mut kept = self.kept.lock().ok()?;
        let entry = kept
            .get_mut(&key)
            .filter(|entry| entry.generation == generation)?;
        entry.generation = answer.generation;
        Some(tree)
    }

    /// Keeps `tree`, read at `generation` of `app`, for this window; a
    /// toolkit whose events do not keep pace with its changes (a browser,
    /// a toolkit not mapped) is never kept.
    pub(super) fn keep(
        &self,
        (pid, title, bounds): (u32, &str, Bounds),
        app: &str,
        generation: Generation,
        tree: &Tree,
        objects: Objects,
    ) {
        // A tree with an object the watcher would not name in full is not
        // kept (an event about it could not be told apart).
        if !tree.toolkit.events_keep_pace()
            || objects
                .keys()
                .any(|o| o.len() > MAX_OBJECT || o == LONG_OBJECT)
        {
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
                    objects,
                },
            );
        }
    }
}

/// The states (named as the walk names them) and screen extents `object`
/// of `app` answers now.
async fn answers_of(
    conn: &zbus::Connection,
    app: &str,
    object: &str,
) -> Option<(Vec<String>, (i32, i32, i32, i32))> {
    use super::walk::proxy_at;
    use atspi::proxy::accessible::AccessibleProxy;
    use atspi::proxy::component::ComponentProxy;
    let accessible: AccessibleProxy<'_> = proxy_at(conn, app, object).await?;
    let component: ComponentProxy<'_> = proxy_at(conn, app, object).await?;
    let (states, extents) = tokio::join!(
        accessible.get_state(),
        component.get_extents(atspi::CoordType::Screen)
    );
    let states = states.ok()?.iter().map(super::walk::state_name).collect();
    Some((states, extents.ok()?))
}

/// The watcher: counts every event by its sender, and answers barriers
/// when their ping's reply comes through the stream.
async fn watch(
    conn: zbus::Connection,
    mut stream: MessageStream,
    mut requests: mpsc::UnboundedReceiver<Barrier>,
    registry: Option<String>,
) {
    let mut logs: HashMap<String, Log> = HashMap::new();
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
                            Some(sender) => {
                                if logs.len() >= LOGS && !logs.contains_key(&sender) {
                                    logs.clear();
                                    everyone += 1;
                                }
                                let object = header.path().map(|p| p.as_str()).unwrap_or(LONG_OBJECT);
                                logs.entry(sender).or_default().push(object, Change::of(&message));
                            }
                            None => everyone += 1,
                        }
                    }
                    Type::MethodReturn | Type::Error => {
                        let Some(serial) = header.reply_serial() else { continue };
                        let Some(request) = pending.remove(&serial) else { continue };
                        let answered = message.message_type() == Type::MethodReturn
                            && header.sender().is_some_and(|s| s.as_str() == request.app);
                        let log = logs.get(&request.app);
                        let generation = (log.map_or(0, |l| l.count), everyone);
                        let events = request.since.and_then(|since| match log {
                            Some(log) => log.since(since),
                            None => (since == 0).then(Vec::new),
                        });
                        let _ = request
                            .reply
                            .send(answered.then_some(Answer { generation, events }));
                    }
                    Type::MethodCall => {}
                }
            }
        }
    }
}
