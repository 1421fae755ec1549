package egress

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// answerTTL is short: a catalogue can change under a running environment.
const answerTTL = 5

// ServeDNS answers one query (dns.Handler).
func (g *Gateway) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	_ = w.WriteMsg(g.AnswerDNS(req))
}

// AnswerDNS is the answer the gateway gives to req.
func (g *Gateway) AnswerDNS(req *dns.Msg) *dns.Msg {
	resp := new(dns.Msg)
	if req.Opcode != dns.OpcodeQuery {
		return resp.SetRcode(req, dns.RcodeNotImplemented)
	}
	if len(req.Question) != 1 {
		return resp.SetRcode(req, dns.RcodeFormatError)
	}
	q := req.Question[0]
	name := normalizeHost(q.Name)
	st := g.state.Load()
	m := st.cat.lookup(name)
	if name == ControlHost || m.Local() {
		resp.SetReply(req)
		resp.Authoritative = true
		for _, s := range st.cfg.AnswerAddrs {
			a := netip.MustParseAddr(s) // validated by Reload
			hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: answerTTL}
			switch {
			case a.Is4() && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY):
				hdr.Rrtype = dns.TypeA
				resp.Answer = append(resp.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
			case a.Is6() && (q.Qtype == dns.TypeAAAA || q.Qtype == dns.TypeANY):
				hdr.Rrtype = dns.TypeAAAA
				resp.Answer = append(resp.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
			}
		}
		g.logDecision(Decision{Kind: "dns", Host: name, Mode: modeOfDNS(name, m), Entry: m.Rule.Host})
		return resp
	}
	if m.Forwarded() && st.cfg.UpstreamDNS != "" {
		g.logDecision(Decision{Kind: "dns", Host: name, Mode: modeOf(m), Entry: m.Rule.Host})
		return g.forwardDNS(req, st.cfg.UpstreamDNS)
	}
	var why string
	var code uint16
	switch {
	case !m.Found:
		why, code = fmt.Sprintf("%s %s is not in the egress catalogue", NotInCatalogue, name), dns.ExtendedErrorCodeBlocked
	case m.Rule.Mode == manifest.ModeBlock:
		why, code = fmt.Sprintf("%s %s is blocked by catalogue entry %s", Blocked, name, m.Rule.Host), dns.ExtendedErrorCodeBlocked
	default:
		why, code = fmt.Sprintf("%s is forwarded through the HTTP proxy (catalogue entry %s, mode %s); this gateway has no upstream resolver", name, m.Rule.Host, m.Rule.Mode), dns.ExtendedErrorCodeProhibited
	}
	g.logDecision(Decision{Kind: "dns", Host: name, Mode: modeOf(m), Entry: m.Rule.Host, Status: dns.RcodeNameError})
	resp.SetRcode(req, dns.RcodeNameError)
	if opt := req.IsEdns0(); opt != nil {
		resp.SetEdns0(opt.UDPSize(), false)
		resp.IsEdns0().Option = append(resp.IsEdns0().Option, &dns.EDNS0_EDE{InfoCode: code, ExtraText: why})
	}
	return resp
}

func modeOfDNS(name string, m Match) string {
	if name == ControlHost {
		return "control"
	}
	return modeOf(m)
}

func (g *Gateway) forwardDNS(req *dns.Msg, upstream string) *dns.Msg {
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	out, _, err := c.Exchange(req, upstream)
	if err == nil && out.Truncated {
		c.Net = "tcp"
		out, _, err = c.Exchange(req, upstream)
	}
	if err != nil {
		return new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
	}
	out.Id = req.Id
	return out
}
