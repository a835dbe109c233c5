//! The tokens patch and the ex_token transport parameter, end to end between
//! a quiche client and server in memory.

use std::time::{Duration, Instant};

use quiche::test_utils::{emit_flight, Pipe};

fn config(is_server: bool) -> quiche::Config {
    quiche_cr_tests::config(is_server, quiche::CongestionControlAlgorithm::CUBIC)
}

fn pipe(client: &mut quiche::Config, server: &mut quiche::Config) -> Pipe {
    Pipe::with_client_and_server_config(client, server).unwrap()
}

#[test]
fn new_token_reaches_the_client_after_the_handshake() {
    let mut pipe = pipe(&mut config(false), &mut config(true));
    pipe.server.send_new_token(b"first").unwrap();
    assert_eq!(pipe.client.new_token_next(), None);

    pipe.handshake().unwrap();
    pipe.advance().unwrap();

    assert_eq!(pipe.client.new_token_next().as_deref(), Some(&b"first"[..]));
    assert_eq!(pipe.client.new_token_next(), None);
    assert_eq!(
        pipe.server.new_token_next(),
        None,
        "servers never receive tokens"
    );
}

#[test]
fn a_lost_new_token_is_sent_again() {
    let start = Instant::now() + Duration::from_secs(3600);
    quiche::clock::set(start);

    let mut pipe = pipe(&mut config(false), &mut config(true));
    pipe.handshake().unwrap();
    pipe.advance().unwrap();

    pipe.server.send_new_token(b"survives loss").unwrap();
    let dropped = emit_flight(&mut pipe.server).unwrap();
    assert_eq!(
        dropped.len(),
        1,
        "the token leaves in one packet, which the network drops"
    );

    // The probe timeout fires; the client acknowledges the probe, which
    // exposes the dropped packet as lost and queues the token again.
    let timer = pipe.server.timeout_instant().unwrap();
    quiche::clock::set(timer);
    pipe.server.on_timeout();
    pipe.advance().unwrap();

    assert_eq!(pipe.server.stats().lost, 1);
    assert_eq!(
        pipe.client.new_token_next().as_deref(),
        Some(&b"survives loss"[..])
    );
    quiche::clock::unset();
}

#[test]
fn client_presents_its_token_in_the_initial() {
    let mut client_config = config(false);
    let scid = quiche::ConnectionId::from_ref(&[7; 16]);
    let mut client = quiche::connect(
        Some("quiche-cr.test"),
        &scid,
        Pipe::client_addr(),
        Pipe::server_addr(),
        &mut client_config,
    )
    .unwrap();
    client.set_token(b"from an earlier connection").unwrap();

    let mut initial = emit_flight(&mut client).unwrap().remove(0).0;
    let hdr = quiche::Header::from_slice(&mut initial, quiche::MAX_CONN_ID_LEN).unwrap();
    assert_eq!(
        hdr.token.as_deref(),
        Some(&b"from an earlier connection"[..])
    );

    assert_eq!(
        client.set_token(b"too late"),
        Err(quiche::Error::InvalidState)
    );
}

#[test]
fn token_calls_on_the_wrong_side_or_with_bad_tokens_are_refused() {
    let mut pipe = pipe(&mut config(false), &mut config(true));

    assert_eq!(
        pipe.client.send_new_token(b"x"),
        Err(quiche::Error::InvalidState)
    );
    assert_eq!(
        pipe.server.set_token(b"x"),
        Err(quiche::Error::InvalidState)
    );
    assert_eq!(
        pipe.client.set_peer_address_verified(),
        Err(quiche::Error::InvalidState)
    );
    assert_eq!(
        pipe.server.send_new_token(b""),
        Err(quiche::Error::InvalidFrame)
    );
    let too_long = vec![1; quiche::MAX_NEW_TOKEN_LEN + 1];
    assert_eq!(
        pipe.server.send_new_token(&too_long),
        Err(quiche::Error::InvalidFrame)
    );
    assert_eq!(pipe.server.set_peer_address_verified(), Ok(()));
}

#[test]
fn ex_token_parameter_is_announced_by_the_server_and_recognised_by_the_client() {
    let mut client_config = config(false);
    let mut server_config = config(true);
    client_config
        .set_ex_token(ex_token::TP_EX_TOKEN, 0)
        .unwrap();
    server_config
        .set_ex_token(ex_token::TP_EX_TOKEN, ex_token::EX_TOKEN_ENABLED)
        .unwrap();

    let mut pipe = pipe(&mut client_config, &mut server_config);
    pipe.handshake().unwrap();

    let announced = pipe.client.peer_transport_params().unwrap().ex_token;
    assert_eq!(
        announced,
        Some(quiche::ExTokenParameter {
            id: ex_token::TP_EX_TOKEN,
            value: 1
        })
    );
    // A client sends nothing: value 0 means "not in use".
    assert_eq!(pipe.server.peer_transport_params().unwrap().ex_token, None);
}

#[test]
fn a_client_that_does_not_know_ex_token_ignores_it() {
    let mut server_config = config(true);
    server_config
        .set_ex_token(ex_token::TP_EX_TOKEN, ex_token::EX_TOKEN_ENABLED)
        .unwrap();

    let mut pipe = pipe(&mut config(false), &mut server_config);
    pipe.handshake().unwrap();

    assert_eq!(pipe.client.peer_transport_params().unwrap().ex_token, None);
}

#[test]
fn ex_token_code_points_must_fit_a_varint() {
    let mut config = config(false);
    let draft_value = 0x4143_4142_1337_0002;
    assert_eq!(
        config.set_ex_token(draft_value, 1),
        Err(quiche::Error::InvalidTransportParam)
    );
}
