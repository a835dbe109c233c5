//! The one line tokio-cr-server prints per connection: what an operator
//! greps for, so its format is pinned here.

use cr_endpoint::careful_resume::{Phase, Trigger};
use cr_endpoint::ex_token::NoResume;
use cr_endpoint::{EarlyData, ResumeStats};
use tokio_cr::serve::report_line;

fn stats() -> ResumeStats {
    ResumeStats {
        token_presented: false,
        address_validated: false,
        presented: None,
        not_resumed: Some(NoResume::Absent),
        phases: Vec::new(),
        jump_window: None,
        jump_unused: false,
        saved_for_next: None,
        bdp_tokens_sent: 0,
        early_data: EarlyData::NotSent,
    }
}

#[test]
fn a_first_connection_says_it_had_no_token() {
    let peer = "192.0.2.7:50000".parse().unwrap();
    let stats = ResumeStats {
        saved_for_next: Some(767_682),
        ..stats()
    };
    assert_eq!(
        report_line(peer, &stats),
        "peer=192.0.2.7:50000 token=none resumed=no (no token) phases=[] jump=- \
         saved-for-next=767682B early-data=not_sent"
    );
}

#[test]
fn a_resumed_connection_names_its_phases_and_jump() {
    let peer = "[2001:db8::1]:443".parse().unwrap();
    let stats = ResumeStats {
        token_presented: true,
        address_validated: true,
        not_resumed: None,
        phases: vec![
            (Phase::Unvalidated, Trigger::CongestionWindowLimited),
            (Phase::Validating, Trigger::LastUnvalidatedPacketSent),
            (Phase::Normal, Trigger::LastUnvalidatedPacketAcknowledged),
        ],
        jump_window: Some(383_841),
        saved_for_next: Some(767_682),
        ..stats()
    };
    assert_eq!(
        report_line(peer, &stats),
        "peer=[2001:db8::1]:443 token=presented resumed=yes \
         phases=[unvalidated,validating,normal] jump=383841B saved-for-next=767682B early-data=not_sent"
    );
}

#[test]
fn a_refused_token_says_why() {
    let peer = "192.0.2.7:50001".parse().unwrap();
    let stats = ResumeStats {
        token_presented: true,
        not_resumed: Some(NoResume::AlreadyInUse),
        ..stats()
    };
    assert_eq!(
        report_line(peer, &stats),
        "peer=192.0.2.7:50001 token=presented \
         resumed=no (saved capacity already used by another connection) phases=[] jump=- \
         saved-for-next=- early-data=not_sent"
    );
}
