//! The server's side of a wait (see `wait`): its second phase, look by
//! look, each look allowed on the server's state and made on the desktop
//! with the state free, the wait sleeping between them.

use super::Refusal;
use super::execute::before;
use super::server::Server;
use super::state::Answer;

impl Server {
    /// The second phase of a wait, look by look: the state is locked to
    /// mark the start, for each look and to end the receipt, and free
    /// while the wait sleeps between looks (see `wait`).
    pub(super) async fn finish_wait(
        &self,
        begun: super::execute::Begun,
        who: Option<super::access::Role>,
    ) -> Result<Answer, Refusal> {
        use super::wait::{Look, Wait, failed};
        let tool = begun.request.tool.clone();
        let parsed = Wait::parse(&tool, &begun.request.args, &begun.request.session_id);
        let mut wait = match parsed {
            Ok(Some(wait)) => wait,
            Ok(None) => return Err(Refusal::plain(format!("{tool} is not a wait"))),
            // The caller's own arguments, refused in its own words.
            Err(error) => {
                return self
                    .on_state(move |state| state.conclude(begun, Err(before(error))))
                    .await
                    .and_then(|answer| answer);
            }
        };
        let begun = self
            .on_state(move |state| {
                state.wait_started(&begun);
                begun
            })
            .await?;
        let result = loop {
            // Whether it may look, on the state; the look itself on the
            // desktop, with the state free (see `staged`).
            let (back, may) = self
                .on_state(move |state| {
                    let may = state.may_look(&wait);
                    (wait, may)
                })
                .await?;
            wait = back;
            if let Err(error) = may {
                break Err(before(failed(&tool, error)));
            }
            // One of the caller's turns for the look and its matching,
            // none while the wait sleeps.
            let turn = match self.turns.take(who.as_ref()).await {
                Ok(turn) => turn,
                Err(error) => break Err(before(error)),
            };
            let looked = self
                .on_desk(
                    &turn,
                    std::time::Instant::now() + super::staged::CALL_BUDGET,
                    move |desk| {
                        let look = desk.look(&mut wait);
                        (wait, look)
                    },
                )
                .await;
            let look = match looked {
                Ok((back, look)) => {
                    wait = back;
                    look
                }
                Err(error) => break Err(before(error)),
            };
            // A text wait's matching, off the state and off the executor.
            let look = match look {
                Ok(Look::Texts(id, texts)) => {
                    let judged = tokio::task::spawn_blocking(move || {
                        let judged = wait.judge_texts(id, &texts);
                        (wait, judged)
                    })
                    .await;
                    match judged {
                        Ok((back, judged)) => {
                            wait = back;
                            judged
                        }
                        Err(error) => {
                            break Err(before(Refusal::plain(format!(
                                "the wait's matching failed: {error}"
                            ))));
                        }
                    }
                }
                other => other,
            };
            drop(turn);
            match look {
                Ok(Look::Texts(..)) => {
                    break Err(before(Refusal::plain("a wait's texts were not matched")));
                }
                Ok(Look::Done(answer)) => {
                    break Ok(super::actuate::ToolResult {
                        structured: answer,
                        images: Vec::new(),
                    });
                }
                Ok(Look::Again(pause)) => tokio::time::sleep(pause).await,
                Err(error) => break Err(before(failed(&tool, error))),
            }
        };
        self.on_state(move |state| state.conclude(begun, result))
            .await
            .and_then(|answer| answer)
    }
}
