//! Encoding and parsing agree, and envelopes from other stacks (other prefixes, default
//! namespaces, whitespace, wrapped base64, headers, RPC-style parameters) are accepted.

use bytes::Bytes;
use wirebench_soap::{
    CONTENT_TYPE, Request, Response, SOAP_ACTION_ECHO, SOAP_ACTION_SINK, encode_request,
    encode_response, max_envelope, parse_request, parse_response,
};

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn constants() {
    assert_eq!(CONTENT_TYPE, "text/xml; charset=utf-8");
    assert_eq!(SOAP_ACTION_ECHO, "\"urn:wirebench:bench#Echo\"");
    assert_eq!(SOAP_ACTION_SINK, "\"urn:wirebench:bench#Sink\"");
}

#[test]
fn request_exact_shape() {
    let xml = encode_request(Some(7), true, b"hi!");
    assert_eq!(
        std::str::from_utf8(&xml).unwrap(),
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
         <soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" \
         xmlns:wb=\"urn:wirebench:bench\"><soap:Body><wb:Echo><wb:seq>7</wb:seq>\
         <wb:data>aGkh</wb:data></wb:Echo></soap:Body></soap:Envelope>"
    );
    let xml = encode_request(None, false, b"");
    assert!(std::str::from_utf8(&xml).unwrap().ends_with(
        "<soap:Body><wb:Sink><wb:data></wb:data></wb:Sink></soap:Body></soap:Envelope>"
    ));
}

#[test]
fn response_exact_shapes() {
    let s = |r: &Response| String::from_utf8(encode_response(r).to_vec()).unwrap();
    assert!(s(&Response::Echo(Bytes::from_static(b"hi!"))).ends_with(
        "<soap:Body><wb:EchoResponse><wb:data>aGkh</wb:data></wb:EchoResponse></soap:Body></soap:Envelope>"
    ));
    assert!(
        s(&Response::Sink).ends_with("<soap:Body><wb:SinkResponse/></soap:Body></soap:Envelope>")
    );
    let f = s(&Response::Fault {
        code: "soap:Client".into(),
        text: "<a & \"b\">".into(),
    });
    assert!(f.ends_with(
        "<soap:Body><soap:Fault><faultcode>soap:Client</faultcode>\
         <faultstring>&lt;a &amp; &quot;b&quot;&gt;</faultstring></soap:Fault></soap:Body></soap:Envelope>"
    ));
}

#[test]
fn request_round_trips() {
    for n in [0, 1, 2, 3, 1000, 100_000] {
        let data = payload(n);
        for seq in [None, Some(0), Some(7), Some(u64::MAX)] {
            for echo in [true, false] {
                let xml = encode_request(seq, echo, &data);
                assert!(xml.len() <= max_envelope(n), "{n}: {} > max", xml.len());
                let req = parse_request(&xml).unwrap();
                assert_eq!(
                    req,
                    Request {
                        seq,
                        echo,
                        data: Bytes::from(data.clone())
                    }
                );
            }
        }
    }
}

#[test]
fn response_round_trips() {
    for n in [0, 1, 1000, 100_000] {
        let r = Response::Echo(Bytes::from(payload(n)));
        let xml = encode_response(&r);
        assert!(xml.len() <= max_envelope(n));
        assert_eq!(parse_response(&xml).unwrap(), r);
    }
    assert_eq!(
        parse_response(&encode_response(&Response::Sink)).unwrap(),
        Response::Sink
    );
    for (code, text) in [
        ("soap:Client", "<a & \"b\">"),
        ("soap:Server", "it's > 'quoted' & <tagged/> ]]> text"),
        ("soap:Client", ""),
        ("soap:Server", "line one\r\nline two\ttab \u{e9}\u{1f600}"),
    ] {
        let r = Response::Fault {
            code: code.into(),
            text: text.into(),
        };
        let xml = encode_response(&r);
        assert!(
            !std::str::from_utf8(&xml).unwrap().contains(text) || !text.contains(['<', '&']),
            "fault text must be escaped"
        );
        assert_eq!(parse_response(&xml).unwrap(), r);
    }
}

#[test]
fn fault_text_with_characters_xml_cannot_carry() {
    let xml = encode_response(&Response::Fault {
        code: "soap:Server".into(),
        text: "nul\0bell\x07".into(),
    });
    assert_eq!(
        parse_response(&xml).unwrap(),
        Response::Fault {
            code: "soap:Server".into(),
            text: "nul\u{fffd}bell\u{fffd}".into(),
        }
    );
}

#[test]
fn max_envelope_grows_with_base64_and_saturates() {
    assert!(max_envelope(0) >= encode_request(Some(u64::MAX), true, b"").len());
    assert!(max_envelope(3_000_000) >= 4_000_000);
    assert!(max_envelope(3_000_000) < 4_400_000);
    assert_eq!(max_envelope(usize::MAX), usize::MAX);
}

#[test]
fn other_prefixes_and_default_namespaces() {
    let xml = br#"<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><b:Echo xmlns:b="urn:wirebench:bench"><b:seq>42</b:seq><b:data>aGVsbG8=</b:data></b:Echo></S:Body></S:Envelope>"#;
    assert_eq!(
        parse_request(xml).unwrap(),
        Request {
            seq: Some(42),
            echo: true,
            data: Bytes::from_static(b"hello"),
        }
    );
    let xml = br#"<Envelope xmlns="http://schemas.xmlsoap.org/soap/envelope/"><Body><Sink xmlns="urn:wirebench:bench"><data>aGVsbG8=</data></Sink></Body></Envelope>"#;
    assert_eq!(
        parse_request(xml).unwrap(),
        Request {
            seq: None,
            echo: false,
            data: Bytes::from_static(b"hello"),
        }
    );
    let xml = br#"<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/" xmlns:x="urn:wirebench:bench"><e:Body><x:EchoResponse><x:data>aGVsbG8=</x:data></x:EchoResponse></e:Body></e:Envelope>"#;
    assert_eq!(
        parse_response(xml).unwrap(),
        Response::Echo(Bytes::from_static(b"hello"))
    );
    let xml = br#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Body><SOAP-ENV:Fault><faultcode>SOAP-ENV:Server</faultcode><faultstring>boom</faultstring><faultactor>urn:x</faultactor><detail><x:why xmlns:x="urn:x">because</x:why></detail></SOAP-ENV:Fault></SOAP-ENV:Body></SOAP-ENV:Envelope>"#;
    assert_eq!(
        parse_response(xml).unwrap(),
        Response::Fault {
            code: "soap:Server".into(),
            text: "boom".into()
        }
    );
    let xml = br#"<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/"><e:Body><b:SinkResponse xmlns:b="urn:wirebench:bench">
    </b:SinkResponse></e:Body></e:Envelope>"#;
    assert_eq!(parse_response(xml).unwrap(), Response::Sink);
}

#[test]
fn whitespace_and_wrapped_base64() {
    let data = payload(200);
    let b64 = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&data)
    };
    // MIME-style: CR LF every 76 characters, plus indentation.
    let wrapped: String = b64
        .as_bytes()
        .chunks(76)
        .map(|c| format!("\r\n        {}", std::str::from_utf8(c).unwrap()))
        .collect();
    let xml = format!(
        "\u{feff}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!-- a comment -->\n\
         <soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"\n\
         \txmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"\n\
         \txmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\n\
           <soapenv:Header/>\n\
           <soapenv:Body>\n\
             <ns1:Echo soapenv:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\" xmlns:ns1=\"urn:wirebench:bench\">\n\
               <seq xsi:type=\"xsd:long\"> 9 </seq>\n\
               <data xsi:type=\"xsd:base64Binary\">{wrapped}\r\n      </data>\n\
             </ns1:Echo>\n\
           </soapenv:Body>\n\
         </soapenv:Envelope>\n"
    );
    assert_eq!(
        parse_request(xml.as_bytes()).unwrap(),
        Request {
            seq: Some(9),
            echo: true,
            data: Bytes::from(data),
        }
    );
}

#[test]
fn cdata_references_headers_and_trailing_elements() {
    // Base64 split over text, a character reference (&#43; is '+') and a CDATA section.
    let xml = br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" xmlns:w="urn:wirebench:bench"><s:Header><t:Trace xmlns:t="urn:trace" s:mustUnderstand="0"><t:id>1</t:id></t:Trace></s:Header><s:Body><w:Echo><w:data>+&#43;<![CDATA[++]]>/w==</w:data></w:Echo></s:Body><w:Trailer/></s:Envelope>"#;
    assert_eq!(
        parse_request(xml).unwrap(),
        Request {
            seq: None,
            echo: true,
            data: Bytes::from_static(&[0xfb, 0xef, 0xbe, 0xff]),
        }
    );
    let xml = br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode>s:Client</faultcode><faultstring>&lt;&#x41;&#66;&gt;&apos;&quot;&amp;</faultstring></s:Fault></s:Body></s:Envelope>"#;
    assert_eq!(
        parse_response(xml).unwrap(),
        Response::Fault {
            code: "soap:Client".into(),
            text: "<AB>'\"&".into()
        }
    );
}

#[test]
fn faultcode_in_another_namespace_is_kept_as_written() {
    let xml = br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault><faultcode xmlns:app="urn:app">app:Overloaded</faultcode><faultstring>busy</faultstring></s:Fault></s:Body></s:Envelope>"#;
    assert_eq!(
        parse_response(xml).unwrap(),
        Response::Fault {
            code: "app:Overloaded".into(),
            text: "busy".into()
        }
    );
}

#[test]
fn nesting_up_to_the_limit_is_accepted() {
    // Envelope (1), Header (2), then 30 more levels: 32 in all.
    let mut xml = String::from(
        r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" xmlns:w="urn:wirebench:bench"><s:Header>"#,
    );
    xml.push_str("<x:a xmlns:x=\"urn:x\">");
    xml.push_str(&"<x:a>".repeat(28));
    xml.push_str("<x:leaf/>");
    xml.push_str(&"</x:a>".repeat(29));
    xml.push_str(r#"</s:Header><s:Body><w:Sink><w:data/></w:Sink></s:Body></s:Envelope>"#);
    assert_eq!(
        parse_request(xml.as_bytes()).unwrap(),
        Request {
            seq: None,
            echo: false,
            data: Bytes::new()
        }
    );
}
