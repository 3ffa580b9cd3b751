//! Each ordering bug of the seeds, and the type that makes it impossible.
//!
//! This module holds no code. It is the map a reviewer reads to trust the
//! chain: for every way the upstream run-time graph could be driven wrong,
//! which type or check here refuses it, and which test proves so
//! (`ui-tests/` for what must not compile, `tests/` for what must fail at
//! run time).
//!
//! # Mutating before the lease
//!
//! The only `execute` in the crate is [`super::Leased::execute`]. `Leased`
//! has private fields and no public constructor; the one function that
//! builds it is [`super::Reserved::lease`], which has validated the lease
//! into a [`super::BoundLease`]. Calling `execute` on any other stage is
//! E0599 (`ui-tests/fail/execute_on_*.rs`).
//!
//! # Executing an action that waits for approval
//!
//! [`super::PendingApproval`] has no `reserve`, `lease` or `execute`. The
//! only way from it to [`super::Approved`] is `approve`, which checks both
//! digests (`ui-tests/fail/reserve_on_pending.rs`,
//! `ui-tests/fail/pending_is_not_approved.rs`).
//!
//! # Approving one action and running another
//!
//! [`super::Approval::check_against`] binds the approval to the preview's
//! `argsDigest` and `policyDigest`; [`super::Authority`] re-checks the route
//! and both digests inside `execute`. A receipt whose `actionDigest` differs
//! is refused by [`crate::runtime::binding::validate_receipt`].
//!
//! # Two authorities, or none
//!
//! [`super::ApprovalSource`] is an enum: a grant id *or* the runtime holding
//! the approval. The JSON form is parsed strictly to the same effect
//! ([`super::Approval::from_json`]).
//!
//! # Replacing a checkpointed preview on resume
//!
//! [`super::Session::resume`] takes only the approval; the preview comes out
//! of the sealed checkpoint. Stores never overwrite and `resume` requires
//! exactly one record with a valid HMAC for this session and identity.
//!
//! # Running the same stage twice
//!
//! Transitions take `self`: a second `execute`, `approve` or `reserve` on the
//! same value is E0382 (`ui-tests/fail/*_twice.rs`). No stage is `Clone`
//! (`ui-tests/fail/clone_stage.rs`).
//!
//! # Trusting an answer about someone else
//!
//! Leases, reservations and receipts enter a stage only as
//! [`super::BoundLease`], [`super::BoundReservation`] and
//! [`super::BoundReceipt`], and a preview only as [`super::FreshPreview`],
//! which only the binding validators construct (`ui-tests/fail/forge_*.rs`,
//! `hidden_constructor.rs`).
//!
//! # Running on an expired preview
//!
//! The envelope's freshness is checked when the preview returns, at
//! approval, at reservation and again inside `execute`, against the
//! session's [`crate::clock::Clock`]. A clock may answer "still ahead" from
//! a cheap source only if it never does so for a passed deadline; the system
//! clock's coarse answers keep a 50 ms margin and fall back to a precise read
//! (`tests/auth_and_clock.rs` brackets each answer with precise reads).
//!
//! # Leaking a reservation
//!
//! `Reserved`, `Leased` and `Executed` own a reservation guard. Every error
//! path after a reservation was accepted releases it explicitly; `Drop`
//! hands an unreleased one to the session's reaper, which
//! [`super::Session::shutdown`] drains.
