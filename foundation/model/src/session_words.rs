//! What a protocol calls the moment a load session is up, for the words of the load
//! charts and table: the session-load metrics (`load.logged_in`, `load.login`, the
//! intervals' `logins` column) are shared by every protocol with a load workload, but an
//! XMPP session is up when it has logged in (RFC 6120 resource binding) and an MQTT one
//! when its SUBACK has come (docs/load.md), and a reader must not be told MQTT "logged in".

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionWords {
    /// After "Sessions": "logged in", "subscribed".
    pub up: &'static str,
    /// The event, plural: "logins", "subscriptions".
    pub events: &'static str,
    /// The event as a noun before "time": "login", "subscription".
    pub event: &'static str,
}

impl SessionWords {
    /// A session that logs in (XMPP), and the default.
    pub const LOGIN: SessionWords = SessionWords {
        up: "logged in",
        events: "logins",
        event: "login",
    };
    /// What a chart of several protocols' sessions says.
    pub const ANY: SessionWords = SessionWords {
        up: "up",
        events: "sessions up",
        event: "set-up",
    };

    /// [`SessionWords::events`] with a capital, for a title's start.
    pub fn events_title(&self) -> String {
        capital(self.events)
    }

    /// [`SessionWords::event`] with a capital, for a title's start.
    pub fn event_title(&self) -> String {
        capital(self.event)
    }

    /// The words of several protocols' sessions together: theirs if they agree.
    pub fn common(all: impl IntoIterator<Item = SessionWords>) -> SessionWords {
        let mut all = all.into_iter();
        let Some(first) = all.next() else {
            return SessionWords::LOGIN;
        };
        if all.all(|w| w == first) {
            first
        } else {
            SessionWords::ANY
        }
    }
}

impl Default for SessionWords {
    fn default() -> SessionWords {
        SessionWords::LOGIN
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUB: SessionWords = SessionWords {
        up: "subscribed",
        events: "subscriptions",
        event: "subscription",
    };

    #[test]
    fn protocols_that_agree_keep_their_words_and_others_get_neutral_ones() {
        assert_eq!(SessionWords::common([SUB, SUB]), SUB);
        assert_eq!(
            SessionWords::common([SUB, SessionWords::LOGIN]),
            SessionWords::ANY
        );
        assert_eq!(SessionWords::common([]), SessionWords::LOGIN);
        assert_eq!(SUB.events_title(), "Subscriptions");
        assert_eq!(SessionWords::ANY.event_title(), "Set-up");
    }
}
