//! Every refusal, with its message.

use wirebench_soap::{MAX_INPUT, SoapError, parse_request, parse_response};

const ENV: &str = r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:wb="urn:wirebench:bench">"#;

/// A request envelope around `body` (the content of soap:Body).
fn req(body: &str) -> String {
    format!("{ENV}<soap:Body>{body}</soap:Body></soap:Envelope>")
}

fn req_err(xml: &str) -> String {
    parse_request(xml.as_bytes()).unwrap_err().to_string()
}

fn resp_err(xml: &str) -> String {
    parse_response(xml.as_bytes()).unwrap_err().to_string()
}

#[test]
fn missing_envelope() {
    assert_eq!(req_err(""), "no soap:Envelope");
    assert_eq!(req_err("  \n"), "no soap:Envelope");
    assert_eq!(
        req_err("<?xml version=\"1.0\"?><!-- x -->"),
        "no soap:Envelope"
    );
    assert_eq!(
        req_err("<wb:Echo xmlns:wb=\"urn:wirebench:bench\"/>"),
        "root element is wb:Echo, expected soap:Envelope"
    );
    assert_eq!(
        req_err("<html><body/></html>"),
        "root element is html (no namespace), expected soap:Envelope"
    );
    assert_eq!(req_err("hello"), "unexpected text \"hello\" in the prolog");
}

#[test]
fn wrong_envelope_namespace() {
    let soap12 = r#"<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Body/></env:Envelope>"#;
    assert_eq!(
        req_err(soap12),
        "SOAP 1.2 envelope; this server speaks SOAP 1.1"
    );
    assert_eq!(
        resp_err(soap12),
        "SOAP 1.2 envelope; this server speaks SOAP 1.1"
    );
    assert_eq!(parse_request(soap12.as_bytes()), Err(SoapError::Soap12));
    assert_eq!(
        req_err(r#"<x:Envelope xmlns:x="urn:not-soap"><x:Body/></x:Envelope>"#),
        "soap:Envelope in namespace urn:not-soap, expected http://schemas.xmlsoap.org/soap/envelope/"
    );
    assert_eq!(
        req_err("<Envelope><Body/></Envelope>"),
        "soap:Envelope in namespace (none), expected http://schemas.xmlsoap.org/soap/envelope/"
    );
    assert_eq!(
        req_err("<soap:Envelope><soap:Body/></soap:Envelope>"),
        "undeclared namespace prefix in soap:Envelope"
    );
}

#[test]
fn missing_body() {
    assert_eq!(
        req_err(r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"/>"#),
        "no soap:Body"
    );
    assert_eq!(req_err(&format!("{ENV}</soap:Envelope>")), "no soap:Body");
    assert_eq!(
        req_err(&format!("{ENV}<soap:Header/></soap:Envelope>")),
        "no soap:Body"
    );
    assert_eq!(
        resp_err(&format!("{ENV}\n  </soap:Envelope>")),
        "no soap:Body"
    );
    assert_eq!(
        req_err(&format!(
            "{ENV}<soap:Body><wb:Sink><wb:data/></wb:Sink></soap:Body><soap:Body/></soap:Envelope>"
        )),
        "soap:Body appears more than once"
    );
    assert_eq!(
        req_err(&format!("{ENV}<wb:Body/></soap:Envelope>")),
        "unexpected element wb:Body in soap:Envelope"
    );
}

#[test]
fn unknown_operation() {
    assert_eq!(
        req_err(&req("<wb:Foo><wb:data/></wb:Foo>")),
        "unknown operation wb:Foo"
    );
    assert_eq!(
        req_err(&req("<Echo><data/></Echo>")),
        "unknown operation Echo (no namespace)"
    );
    assert_eq!(
        req_err(&req(r#"<o:Echo xmlns:o="urn:other"/>"#)),
        "unknown operation o:Echo (namespace urn:other)"
    );
    assert_eq!(req_err(&req("")), "soap:Body holds no operation");
    assert_eq!(req_err(&req(" \n ")), "soap:Body holds no operation");
    assert_eq!(
        req_err(&format!("{ENV}<soap:Body/></soap:Envelope>")),
        "soap:Body holds no operation"
    );
    assert_eq!(
        req_err(&req(
            "<wb:Sink><wb:data/></wb:Sink><wb:Echo><wb:data/></wb:Echo>"
        )),
        "unexpected element wb:Echo in soap:Body, after the operation"
    );
    assert_eq!(
        req_err(&req("text<wb:Sink/>")),
        "unexpected text \"text\" in soap:Body"
    );
}

#[test]
fn missing_data() {
    assert_eq!(req_err(&req("<wb:Echo/>")), "wb:Echo has no wb:data");
    assert_eq!(
        req_err(&req("<wb:Sink><wb:seq>1</wb:seq></wb:Sink>")),
        "wb:Sink has no wb:data"
    );
    assert_eq!(
        req_err(&req(
            "<wb:Echo><wb:seq>1</wb:seq><wb:data/><wb:data/></wb:Echo>"
        )),
        "wb:data appears more than once"
    );
    assert_eq!(
        req_err(&req(
            "<wb:Echo><wb:seq>1</wb:seq><wb:seq>2</wb:seq></wb:Echo>"
        )),
        "wb:seq appears more than once"
    );
    assert_eq!(
        req_err(&req("<wb:Echo><wb:extra/><wb:data/></wb:Echo>")),
        "unexpected element wb:extra in wb:Echo"
    );
    assert_eq!(
        req_err(&req("<wb:Echo><wb:data><b>AAAA</b></wb:data></wb:Echo>")),
        "unexpected element b (no namespace) in wb:data"
    );
    assert_eq!(
        resp_err(&format!(
            "{ENV}<soap:Body><wb:EchoResponse/></soap:Body></soap:Envelope>"
        )),
        "wb:EchoResponse has no wb:data"
    );
}

#[test]
fn bad_seq() {
    for (seq, quoted) in [
        ("seven", "\"seven\""),
        ("", "\"\""),
        ("-1", "\"-1\""),
        ("1.5", "\"1.5\""),
        ("18446744073709551616", "\"18446744073709551616\""),
        ("0x10", "\"0x10\""),
    ] {
        assert_eq!(
            req_err(&req(&format!(
                "<wb:Echo><wb:seq>{seq}</wb:seq><wb:data/></wb:Echo>"
            ))),
            format!("wb:seq is not a number: {quoted}"),
        );
    }
    let long = "9".repeat(1000);
    let e = req_err(&req(&format!(
        "<wb:Echo><wb:seq>{long}</wb:seq><wb:data/></wb:Echo>"
    )));
    assert!(e.starts_with("wb:seq is not a number: \"999"), "{e}");
    assert!(e.len() < 120, "quoted text is cut: {e}");
}

#[test]
fn bad_base64() {
    let cases = [
        ("aGVsbG8", "wb:data is not base64: "), // missing padding
        (
            "aGVsbG8!",
            "wb:data is not base64: Invalid symbol 33, offset 7.",
        ),
        (
            "aGVs-G8=",
            "wb:data is not base64: Invalid symbol 45, offset 4.",
        ),
        (
            "aGVs_G8=",
            "wb:data is not base64: Invalid symbol 95, offset 4.",
        ),
        ("a", "wb:data is not base64: "),
        ("aGVsbG8==", "wb:data is not base64: "),
        ("aG=sbG8=", "wb:data is not base64: "),
        ("aGk=aGk=", "wb:data is not base64: "),
        ("aGl=", "wb:data is not base64: "), // nonzero trailing bits
    ];
    for (b64, prefix) in cases {
        let e = req_err(&req(&format!(
            "<wb:Echo><wb:data>{b64}</wb:data></wb:Echo>"
        )));
        assert!(e.starts_with(prefix), "{b64}: {e}");
        assert!(e.len() > "wb:data is not base64: ".len(), "{b64}: {e}");
        let e = resp_err(&format!(
            "{ENV}<soap:Body><wb:EchoResponse><wb:data>{b64}</wb:data></wb:EchoResponse></soap:Body></soap:Envelope>"
        ));
        assert!(e.starts_with(prefix), "{b64}: {e}");
    }
}

#[test]
fn doctype_is_refused() {
    let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
]>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><wb:Echo xmlns:wb="urn:wirebench:bench"><wb:data>&lol2;</wb:data></wb:Echo></soap:Body></soap:Envelope>"#;
    let msg = "DOCTYPE declarations are refused (entity-expansion attacks; SOAP forbids them)";
    assert_eq!(req_err(bomb), msg);
    assert_eq!(resp_err(bomb), msg);
    assert_eq!(
        req_err(&req("<wb:Echo><wb:data>&lol;</wb:data></wb:Echo>")),
        "unknown entity &lol;"
    );
}

#[test]
fn too_deep() {
    let mut xml = format!("{ENV}<soap:Header>");
    xml.push_str(&"<a>".repeat(40));
    xml.push_str(&"</a>".repeat(40));
    xml.push_str(
        "</soap:Header><soap:Body><wb:Sink><wb:data/></wb:Sink></soap:Body></soap:Envelope>",
    );
    assert_eq!(req_err(&xml), "elements nested deeper than 32");
    assert_eq!(resp_err(&xml), "elements nested deeper than 32");
    // Exactly one level too many, as an empty element.
    let mut xml = format!("{ENV}<soap:Header>");
    xml.push_str(&"<a>".repeat(30));
    xml.push_str("<b/>");
    assert_eq!(req_err(&xml), "elements nested deeper than 32");
    // A million levels is refused as quickly.
    assert_eq!(
        req_err(&format!("{ENV}<soap:Header>{}", "<a>".repeat(1_000_000))),
        "elements nested deeper than 32"
    );
}

#[test]
fn too_large() {
    let big = vec![b' '; MAX_INPUT + 1];
    assert_eq!(
        parse_request(&big).unwrap_err().to_string(),
        format!(
            "envelope of {} bytes is larger than the 67108864-byte limit",
            MAX_INPUT + 1
        )
    );
    assert_eq!(
        parse_response(&big),
        Err(SoapError::TooLarge(MAX_INPUT + 1))
    );
    // At the limit it is parsed (and here refused for another reason).
    assert_eq!(parse_request(&big[1..]), Err(SoapError::NoEnvelope));
}

#[test]
fn too_many_namespace_declarations() {
    let decls: String = (0..1000)
        .map(|i| format!(" xmlns:p{i}=\"urn:{i}\""))
        .collect();
    let xml = format!(
        "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"{decls}><soap:Body/></soap:Envelope>"
    );
    assert_eq!(
        req_err(&xml),
        "more than 64 namespace declarations in scope"
    );
    // Declared and dropped again by siblings: never more than a few in scope.
    let siblings: String = (0..1000)
        .map(|i| format!("<p{i}:h xmlns:p{i}=\"urn:{i}\"/>"))
        .collect();
    let xml = format!(
        "{ENV}<soap:Header>{siblings}</soap:Header><soap:Body><wb:Sink><wb:data/></wb:Sink></soap:Body></soap:Envelope>"
    );
    assert!(parse_request(xml.as_bytes()).is_ok());
}

#[test]
fn not_well_formed() {
    let e = req_err(&format!("{ENV}<soap:Body></soap:Bdoy></soap:Envelope>"));
    assert!(e.starts_with("XML error at byte "), "{e}");
    assert!(e.contains("soap:Bdoy"), "{e}");
    let e = req_err(&req("<wb:Echo><wb:data>a & b</wb:data></wb:Echo>"));
    assert!(e.starts_with("XML error at byte "), "{e}");
    let e = req_err(&req("<wb:Echo a=b><wb:data/></wb:Echo>"));
    assert!(
        e.starts_with("XML error at byte ") || e == "wb:Echo has no wb:data",
        "{e}"
    );
    let mut bad_utf8 = req("<wb:Echo><wb:data>AAAA</wb:data></wb:Echo>").into_bytes();
    let at = bad_utf8.windows(4).position(|w| w == b"AAAA").unwrap();
    bad_utf8[at] = 0xff;
    let e = parse_request(&bad_utf8).unwrap_err().to_string();
    assert!(e.starts_with("XML error at byte "), "{e}");
    // Truncated anywhere: an error, never a panic or a success.
    let full = req("<wb:Echo><wb:seq>3</wb:seq><wb:data>aGVsbG8=</wb:data></wb:Echo>");
    for n in 0..full.len() {
        assert!(
            parse_request(&full.as_bytes()[..n]).is_err(),
            "prefix of {n} bytes"
        );
    }
    assert_eq!(
        req_err(&format!("{ENV}<soap:Body><wb:Sink>")),
        "input ends inside wb:Sink"
    );
}

#[test]
fn content_after_envelope() {
    let xml = format!("{}<x/>", req("<wb:Sink><wb:data/></wb:Sink>"));
    assert_eq!(
        req_err(&xml),
        "unexpected element x (no namespace) in the document after soap:Envelope"
    );
    let xml = format!("{}junk", req("<wb:Sink><wb:data/></wb:Sink>"));
    assert_eq!(
        req_err(&xml),
        "unexpected text \"junk\" in the document after soap:Envelope"
    );
    // Whitespace and comments after it are fine.
    let xml = format!("{}\n<!-- end -->\n", req("<wb:Sink><wb:data/></wb:Sink>"));
    assert!(parse_request(xml.as_bytes()).is_ok());
}

#[test]
fn must_understand_headers() {
    let xml = format!(
        r#"{ENV}<soap:Header><t:Tx xmlns:t="urn:tx" soap:mustUnderstand="1">5</t:Tx></soap:Header><soap:Body><wb:Sink><wb:data/></wb:Sink></soap:Body></soap:Envelope>"#
    );
    assert_eq!(
        req_err(&xml),
        "header t:Tx (namespace urn:tx) has soap:mustUnderstand=\"1\" and is not understood"
    );
    // An unqualified mustUnderstand attribute is not SOAP's.
    let xml = xml.replace("soap:mustUnderstand", "mustUnderstand");
    assert!(parse_request(xml.as_bytes()).is_ok());
}

#[test]
fn response_rejections() {
    let body = |b: &str| format!("{ENV}<soap:Body>{b}</soap:Body></soap:Envelope>");
    assert_eq!(
        resp_err(&body("")),
        "soap:Body has no wb:EchoResponse, wb:SinkResponse or soap:Fault"
    );
    assert_eq!(
        resp_err(&body("<wb:Echo><wb:data/></wb:Echo>")),
        "unexpected element wb:Echo in soap:Body"
    );
    assert_eq!(
        resp_err(&body("<wb:SinkResponse>ok</wb:SinkResponse>")),
        "unexpected text \"ok\" in wb:SinkResponse"
    );
    assert_eq!(
        resp_err(&body("<wb:SinkResponse/><wb:SinkResponse/>")),
        "unexpected element wb:SinkResponse in soap:Body, after the response"
    );
    assert_eq!(
        resp_err(&body(
            "<soap:Fault><faultstring>x</faultstring></soap:Fault>"
        )),
        "soap:Fault has no faultcode"
    );
    assert_eq!(
        resp_err(&body(
            "<soap:Fault><faultcode>soap:Client</faultcode></soap:Fault>"
        )),
        "soap:Fault has no faultstring"
    );
    assert_eq!(
        resp_err(&body(
            "<soap:Fault><faultcode>a</faultcode><faultcode>b</faultcode></soap:Fault>"
        )),
        "faultcode appears more than once"
    );
    assert_eq!(
        resp_err(&body(
            "<soap:Fault><soap:faultcode>soap:Client</soap:faultcode></soap:Fault>"
        )),
        "unexpected element soap:faultcode in soap:Fault"
    );
    assert_eq!(
        resp_err(&body(
            "<wb:EchoResponse><wb:seq>1</wb:seq></wb:EchoResponse>"
        )),
        "unexpected element wb:seq in wb:EchoResponse"
    );
}
