//! Each attack on the chain, and what rules it out.
//!
//! This module holds no code. It is the map a reviewer reads to trust the
//! chain: for every way the protocol could be driven wrong — by a caller
//! holding every public item of this crate, or by a runtime answering
//! anything — which type or check refuses it, and which test proves so
//! (`ui-tests/fail/` for what must not compile, `tests/` for what must fail
//! at run time). Nothing here claims more than those tests show.
//!
//! # The one door
//!
//! ## Mutating without `Leased` (finding 1)
//!
//! The only `execute` in the crate is [`super::Leased::execute`], and the
//! runtime's own `execute_action` takes a [`crate::runtime::ExecuteProof`]
//! that only `Leased::execute` makes. The same holds for every method that
//! changes the server's state: `reserve_target` (`ReserveProof`, made by
//! `Approved::reserve`), `acquire_lease` (`LeaseProof`, `Reserved::lease`),
//! `release_target` and `release_lease` (made by the action guard and its
//! reaper). Proofs have private fields and private constructors, are not
//! `Clone`, and borrow from the stage, so a runtime cannot keep one.
//! [`super::Session`] does not hand out its runtime, and the MCP adapter's
//! raw `call` speaks read-only tools only; approving is the host's
//! `mcp::McpApprover`, which the session cannot reach.
//!
//! - `ui-tests/fail/execute_without_proof.rs`, `reserve_without_proof.rs`,
//!   `lease_without_proof.rs`, `release_without_proof.rs` (E0308)
//! - `ui-tests/fail/mint_execute_proof.rs` (E0451),
//!   `mint_release_proof.rs` (E0624), `clone_proof.rs` (E0599),
//!   `keep_proof_past_stage.rs` (E0521)
//! - `ui-tests/fail/session_hides_runtime.rs` (E0599), `execute_on_*.rs`
//! - `tests/mcp_e2e.rs`: `server_refusal_codes_arrive_typed` (the raw call
//!   refuses every state-changing tool before sending anything)
//! - `tests/chain_attacks.rs`: `a_plan_only_session_cannot_mutate`
//!
//! ```compile_fail,E0599
//! // The session does not hand out its runtime.
//! fn reach<R: adk_computer_use::runtime::ComputerUseRuntime>(session: &adk_computer_use::Session<R>) {
//!     let _ = session.runtime();
//! }
//! ```
//!
//! ```compile_fail,E0308
//! // An envelope is not a proof.
//! async fn mutate<R: adk_computer_use::runtime::ComputerUseRuntime>(
//!     runtime: &R,
//!     envelope: &adk_computer_use::contracts::ActionEnvelope,
//! ) {
//!     let _ = runtime.execute_action(envelope).await;
//! }
//! ```
//!
//! ## One approval, many executions (finding 2)
//!
//! [`super::PendingApproval::suspend`] consumes the pending approval, so it
//! cannot also be approved in process (`ui-tests/fail/approve_after_suspend.rs`,
//! E0382). [`super::Session::resume`] consumes the checkpoint atomically in
//! the store, after every check has passed: of racing resumes, one gets the
//! `Approved` stage and the rest a typed refusal before any runtime call
//! (`tests/chain_attacks.rs`: `a_checkpoint_resumes_once_in_memory`, `racing_resumes_of_one_checkpoint_file_yield_one_approved_stage`, `a_refused_resume_does_not_spend_the_checkpoint`, including eight threads racing on
//! one checkpoint file through separate stores; `tests/mcp_e2e.rs`:
//! `a_suspended_approval_resumes_over_mcp_once_with_its_sealed_arguments`).
//!
//! ```compile_fail,E0382
//! use adk_computer_use::chain::{Approval, PendingApproval};
//! fn both<R: adk_computer_use::runtime::ComputerUseRuntime>(
//!     pending: PendingApproval<R>,
//!     approval: Approval,
//! ) {
//!     let _ = pending.suspend();
//!     let _ = pending.approve(approval);
//! }
//! ```
//!
//! ## A stale chain breaks a live retry (finding 10)
//!
//! What a runtime keeps per preview (for MCP, the exact previewed arguments)
//! is returned with the preview and travels inside the stage, and through a
//! sealed checkpoint, to the one `ExecuteProof` that carries it. There is no
//! side table keyed by action id for a stale chain's cleanup to wipe
//! (`tests/mcp_e2e.rs`: `a_stale_chain_cannot_break_a_live_retry_of_the_same_action`; `tests/chain_attacks.rs`:
//! `retained_state_travels_with_the_stage_and_through_a_checkpoint`).
//!
//! # One judge
//!
//! ## False `Verified` through a swapped postcondition (finding 3)
//!
//! The envelope's postcondition is bound to the proposed one when the
//! preview returns; any difference (swapped, added, removed) is
//! `IdentityMismatch` on `ActionEnvelope.postcondition`
//! (`tests/chain_attacks.rs`: `an_envelope_that_swaps_the_postcondition_is_refused`, `an_envelope_that_adds_a_postcondition_is_refused`).
//!
//! ## Approval skipped through a contradictory preview (finding 4)
//!
//! The route is a total table over (`executable`, `blocker`, policy
//! decision), in [`super::Route`]'s module; contradictions go to a person or
//! are blocked, never allowed. Execution re-derives the route and requires
//! the authority to match it (`tests/chain_attacks.rs`:
//! `the_route_fails_closed_in_every_cell_of_the_table`, all 18
//! cells).
//!
//! ## The runtime's verdict trusted (finding 5)
//!
//! A runtime no longer answers with an outcome at all: its `evidence`
//! method gathers a `verification` object, and `Executed::verify` judges it
//! with the evidence table ([`crate::runtime::evaluate_with`]) against the
//! receipt. A failed receipt is `Failed` whatever the evidence says, and
//! evidence that states nothing is no evidence (`tests/chain_attacks.rs`:
//! `a_runtime_cannot_verify_a_failed_receipt`, `a_runtime_cannot_verify_without_evidence`, `a_runtime_may_downgrade_the_table`).
//!
//! ## A foreign lease or reservation (finding 6)
//!
//! Leases and reservations are bound to the envelope *and* to the session's
//! own agent and execution group, so an envelope that leaves them out lets
//! nothing through (`tests/chain_attacks.rs`: `another_agents_lease_is_refused_even_when_the_envelope_names_no_agent`, `another_groups_reservation_is_refused_even_when_the_envelope_names_no_group`).
//!
//! ## One action's approval reused for another (finding 7)
//!
//! An [`super::Approval`] names the action id as well as both digests, and
//! [`super::Approval::check_against`] binds all three (`tests/chain_attacks.rs`:
//! `an_approval_of_one_action_does_not_approve_another_with_the_same_arguments`).
//!
//! ## Approving one action and running another; two authorities, or none
//!
//! [`super::Authority`] re-checks the route and the approval inside
//! `execute`; a receipt whose `actionDigest` differs is refused by
//! [`crate::binding::validate_receipt`]. [`super::ApprovalSource`]
//! is an enum (a grant id *or* the runtime holding the approval), and the
//! JSON form is parsed strictly (`tests/chain.rs`:
//! `ambiguous_authority_is_rejected`, `changed_digests_are_rejected_*`).
//!
//! ## Replacing a checkpointed preview on resume
//!
//! [`super::Session::resume`] takes only the approval; the preview comes out
//! of the sealed checkpoint. Stores never overwrite and `resume` requires
//! exactly one record with a valid HMAC for this session and identity. The
//! sealing key is keyed once when built and has no fallback key
//! (`tests/chain.rs`: `replaced_or_tampered_checkpoints_*`).
//!
//! # Resources
//!
//! ## Leaking a reservation or a lease (findings 8, 9, 11)
//!
//! `Reserved`, `Leased` and `Executed` own an action guard holding the
//! reservation and the lease. Every terminal path releases both explicitly
//! (together, once the mutation has answered; the lease only after evidence
//! read from the live desktop is in); `Drop` hands what is left to the
//! session's reaper. The
//! reaper runs each release as its own task under a timeout, so a release
//! that panics or hangs is counted as failed and the reaper goes on. The
//! session keeps a ledger of everything its actions hold, so
//! [`super::Session::shutdown`] reclaims what a `mem::forget`-ten stage
//! still holds, and every resource lands in exactly one counter of
//! [`super::ReleaseStats`] (`tests/chain_attacks.rs`: `a_panicking_release_does_not_stop_the_reaper`, `a_hanging_release_times_out_and_shutdown_still_returns`,
//! `shutdown_reclaims_what_a_forgotten_stage_holds`, `a_reservation_dropped_after_the_reaper_stopped_is_counted_lost_once`, `the_lease_is_released_when_the_action_ends_on_every_path`; `tests/mcp_e2e.rs`: `the_lease_is_given_back_after_every_action_over_mcp`;
//! `tests/fault_matrix.rs`: every fault point gives its lease back once).
//!
//! ## Shutting down while stages are alive or calls are in flight
//!
//! `shutdown` marks the session closed first: every stage refuses its next
//! step (`SessionClosed`), and a reservation or lease granted while the
//! shutdown ran is given back by the stage that receives it. Resources in
//! use by a call in flight (the mutation, or their own release) are left to
//! that call and reported in [`super::ReleaseStats::outstanding`]; the rest
//! are handed to the reaper without awaiting, so a shutdown cancelled part
//! way leaves nothing behind. The wait for the reaper is bounded
//! (`tests/chain_attacks.rs`: `shutdown_racing_*`, `a_stage_outliving_*`,
//! `a_shutdown_cancelled_part_way_*`, `a_release_future_forgotten_*`,
//! `a_reservation_granted_while_*`, `a_shutdown_during_the_mutation_*`,
//! `a_shutdown_returns_when_the_reapers_runtime_is_not_driven`).
//!
//! # Outcomes a caller acts on
//!
//! ## "Not committed" read as "not performed" (finding 12)
//!
//! [`super::Verified::performed`] answers from the receipt whether the
//! runtime performed the action, and is what a retry decision uses;
//! [`super::Verified::outcome`] is the seeds' evidence table, where a
//! performed action with contradicting evidence is `Failed`
//! (`tests/chain_attacks.rs`: `a_performed_write_with_contradicting_evidence_says_it_was_performed`).
//!
//! ## An unknown outcome that looks like a clean failure (finding 13)
//!
//! A mutating call that fails in transit, whose answer cannot be read, is
//! bound to something else, or carries a status that settles nothing
//! (`pending`, `running`, `indeterminate`) is
//! [`crate::ComputerUseError::OutcomeUnknown`], carrying the action id the
//! safe retry reuses; a typed refusal stays a refusal. A verification that
//! cannot run still ends the chain, with `performed()` from the receipt, and
//! a release failure after the action says whether it was performed
//! (`tests/chain_attacks.rs`: `a_refusal_before_the_effect_is_not_an_unknown_outcome`, `a_broken_connection_during_the_mutation_is_an_unknown_outcome`, `an_unsettled_receipt_*`,
//! `a_receipt_bound_elsewhere_*`, `a_verification_that_cannot_run_*`,
//! `a_cleanup_failure_after_the_action_*`; `tests/mcp_e2e.rs`:
//! `injected_crashes_leave_the_outcome_unknown_and_name_the_action`).
//!
//! # Time
//!
//! ## Running on an expired preview, lease or reservation
//!
//! Expiries are parsed once when an answer is bound and re-checked, against
//! the session's [`crate::clock::Clock`], at approval, at reservation and
//! again inside `execute`; identity fields bound once are not bound again.
//! A clock may answer "still ahead" from a cheap source only if it never
//! does so for a passed deadline (`tests/auth_and_clock.rs`,
//! `tests/fault_matrix.rs`: `expires_during` rows).
//!
//! # Running the same stage twice
//!
//! Transitions take `self`: a second `execute`, `approve` or `reserve` on the
//! same value is E0382 (`ui-tests/fail/*_twice.rs`). No stage is `Clone`
//! (`ui-tests/fail/clone_stage.rs`), and witnesses cannot be forged
//! (`ui-tests/fail/forge_*.rs`, `hidden_constructor.rs`).
//!
//! # A lease for a task
//!
//! ## Spending one task lease twice for one action, or after its release
//!
//! [`super::Reserved::spend`] consumes the reserved action, so one action
//! spends once (`ui-tests/fail/spend_task_lease_twice.rs`, E0382);
//! [`super::TaskLease::release`] consumes the task lease, so nothing spends
//! from it afterwards (`spend_after_task_release.rs`, E0382). It is not
//! `Clone` (`clone_task_lease.rs`, E0599) and has no `execute`
//! (`execute_on_task_lease.rs`, E0599): `Leased` stays the only stage that
//! mutates. An action spent before the release, or before the task lease
//! was dropped, is refused at `execute` with nothing sent
//! (`tests/task_lease.rs`: `an_action_spent_before_the_release_is_refused_at_execute`,
//! `a_dropped_task_lease_is_released_by_the_reaper_and_spends_nothing_more`).
//!
//! ## Past the budget, past the expiry, outside the boundaries
//!
//! Each spend runs every lease rule against the lease as the server
//! reported it, with the actions already spent counted against the budget,
//! and refuses before anything is sent; the session's own TTL bounds a
//! lease the server let run longer. The lease itself is refused when it is
//! wider than asked (a larger budget, no boundaries, another app or
//! window), and given back at once (`tests/task_lease.rs`:
//! `past_the_budget_*`, `after_the_servers_expiry_*`, `our_own_ttl_*`,
//! `an_action_outside_a_narrower_boundary_*`, `an_action_in_another_mode_*`,
//! `a_hostile_task_lease_is_refused_and_given_back_at_once`; on upstream's
//! server, `tests/upstream.rs`:
//! `a_task_lease_on_upstreams_server_is_one_acquire_and_one_release_for_the_whole_task`).
//!
//! ## Another session's task lease, or two actions at once
//!
//! A task lease is spent only by the session that took it, and by one
//! action at a time: a spend while an earlier action has not ended is
//! refused ([`super::TaskLeaseRefusal`]). A release waits for a mutation
//! in flight under the lease before it is sent (`tests/task_lease.rs`:
//! `a_task_lease_is_spent_only_by_the_session_that_took_it`,
//! `a_spend_while_an_earlier_action_has_not_ended_is_refused`,
//! `a_release_waits_for_the_mutation_in_flight`).
