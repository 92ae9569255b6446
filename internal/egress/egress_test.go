package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestCheckIP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr string
		want string // "" for allowed, else a word of the reason
	}{
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.1.2.3", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"10.1.2.3", "RFC 1918"},
		{"172.16.0.1", "RFC 1918"},
		{"172.31.255.255", "RFC 1918"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "RFC 1918"},
		{"100.64.0.1", "carrier-grade"},
		{"100.127.255.255", "carrier-grade"},
		{"100.128.0.1", ""},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fd00::1", "unique-local"},
		{"fc00::1", "unique-local"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.2.1", "documentation"},
		{"2001:db8::1", "documentation"},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"::ffff:10.0.0.1", "RFC 1918"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::7f00:1", "NAT64"},
		{"64:ff9b::a9fe:a9fe", "link-local"},
		{"64:ff9b::808:808", ""},
		{"64:ff9b:1::1", "NAT64"},
		{"2002:7f00:1::", "6to4"},
		{"2002:c0a8:101::1", "RFC 1918"},
		{"2002:808:808::1", ""},
		{"::127.0.0.1", "IPv4-compatible"},
		{"2001::1", "Teredo"},
		{"100::1", "discard"},
		{"fe80::1%eth0", "link-local"},
		{"4000::1", "global unicast"},
	} {
		err := Policy{}.CheckIP(netip.MustParseAddr(c.addr))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s refused: %v", c.addr, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.addr, err, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	p, err := Parse(" http, 127.0.0.0/8 ,::1/128,10.1.2.3, Hooks.Internal., ")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "http,127.0.0.0/8,::1/128,10.1.2.3/32,hooks.internal" {
		t.Fatalf("parsed %q", got)
	}
	for _, c := range []struct {
		policy, addr string
		allowed      bool
	}{
		{"127.0.0.0/8", "127.0.0.1", true},
		{"127.0.0.0/8", "::ffff:127.0.0.1", true},
		{"127.0.0.0/8", "64:ff9b::7f00:1", true},
		{"127.0.0.0/8", "10.0.0.1", false},
		{"127.0.0.0/8", "::1", false},
		{"::1/128", "::1", true},
		{"10.1.2.3", "10.1.2.3", true},
		{"10.1.2.3", "10.1.2.4", false},
		{"http", "127.0.0.1", false},
	} {
		p, err := Parse(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.CheckIP(netip.MustParseAddr(c.addr)) == nil; got != c.allowed {
			t.Errorf("%q allows %s: %v", c.policy, c.addr, got)
		}
	}
	for _, bad := range []string{"htp:", "10.0.0.0/33", "127.0.0.1/8/8", "fe80::1%eth0", "under_score.example", "a..b"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), Setting) {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
	if p, err := Parse(""); err != nil || p.AllowHTTP || len(p.Prefixes)+len(p.Hosts) != 0 {
		t.Errorf("empty policy: %+v %v", p, err)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	dev, _ := Parse("http,127.0.0.0/8,localhost")
	for _, c := range []struct {
		url    string
		policy Policy
		want   string // "" for accepted
	}{
		{"https://hooks.example.com/x", Policy{}, ""},
		{"https://hooks.example.com:8443/x", Policy{}, ""},
		{"http://hooks.example.com/x", Policy{}, "https"},
		{"http://hooks.example.com/x", dev, ""},
		{"ftp://hooks.example.com/x", dev, "https"},
		{"https://user:pass@hooks.example.com/x", Policy{}, "credentials"},
		{"https://user@hooks.example.com/x", dev, "credentials"},
		{"https:///x", Policy{}, "host"},
		{"/relative", Policy{}, "absolute"},
		{"https://127.0.0.1/x", Policy{}, "loopback"},
		{"https://[::1]/x", Policy{}, "loopback"},
		{"https://[::ffff:127.0.0.1]/x", Policy{}, "IPv4-mapped"},
		{"https://0.0.0.0/x", Policy{}, "unspecified"},
		{"https://10.0.0.1/x", Policy{}, "RFC 1918"},
		{"https://169.254.169.254/latest/meta-data", Policy{}, "link-local"},
		{"https://[fd00::1]/x", Policy{}, "unique-local"},
		{"https://localhost/x", Policy{}, "loopback name"},
		{"https://a.localhost./x", Policy{}, "loopback name"},
		{"https://127.0.0.1/x", dev, ""},
		{"http://localhost:8080/x", dev, ""},
		{"https://[fe80::1%25eth0]/x", Policy{}, "zone"},
		{"https://2130706433/x", Policy{}, "standard form"},
		{"https://127.1/x", Policy{}, "standard form"},
		{"https://0x7f.0.0.1/x", Policy{}, "standard form"},
		{"https://10.0.0.0x1/x", Policy{}, "standard form"},
		{"https://1e100.net/x", Policy{}, ""},
	} {
		err := c.policy.CheckURL(c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s refused: %v", c.url, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal saying %q", c.url, err, c.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://Hooks.Example.com/x":  "https://hooks.example.com:443",
		"http://hooks.example.com/x":   "http://hooks.example.com:80",
		"https://[::1]:8443/x":         "https://[::1]:8443",
		"https://u:p@example.com:1/?q": "https://example.com:1",
	} {
		u, _ := url.Parse(raw)
		if got := Endpoint(u); got != want {
			t.Errorf("Endpoint(%s) = %s, want %s", raw, got, want)
		}
	}
}

// fakeResolver answers every name with the same addresses: names in tests
// never reach DNS.
type fakeResolver []netip.Addr

func (f fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

// loopbackOnly is a dial guard that fails the test, and refuses, if the
// policy lets through an address beyond loopback: the tests never send a
// packet off the machine, even when the code under test is wrong.
func loopbackOnly(t *testing.T) func(string) error {
	return func(address string) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the policy let %s through", address)
			return errors.New("test guard: not loopback")
		}
		return nil
	}
}

// The dialer refuses a refused address before connecting: a loopback
// listener sees no connection, and private addresses (never reachable from
// a test) fail with the policy's error, not a network one.
func TestDialerRefuses(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		resolver fakeResolver
		host     string
	}{
		{"loopback literal", nil, "127.0.0.1"},
		{"name resolving to loopback", fakeResolver{netip.MustParseAddr("127.0.0.1")}, "hooks.example"},
		{"name resolving to metadata", fakeResolver{netip.MustParseAddr("169.254.169.254")}, "hooks.example"},
		{"name resolving to private", fakeResolver{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1")}, "hooks.example"},
		{"mapped loopback", nil, "::ffff:127.0.0.1"},
	} {
		d := &Dialer{Resolver: c.resolver, guard: loopbackOnly(t)}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(c.host, port))
		var re *RefusedError
		if !errors.As(err, &re) {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("%s: %v, want a refusal", c.name, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the loopback listener accepted %d connections", n)
	}
	// Allowed by range, and by host name.
	for _, policy := range []string{"127.0.0.0/8", "hooks.example"} {
		p, _ := Parse(policy)
		d := &Dialer{Policy: p, Resolver: fakeResolver{netip.MustParseAddr("127.0.0.1")}}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("hooks.example", port))
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		conn.Close()
	}
}

// Webhook SSRF at the connection: the webhook client, with only plain http
// allowed, refuses every reserved address form after resolution and before
// connecting — the loopback listener standing in for them sees nothing, and
// the error is the dialer's refusal (the private addresses are never
// actually tried: the check runs before the socket connects).
func TestSecurityWebhookSSRFDial(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	addr := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	for _, c := range []struct {
		url      string
		resolves fakeResolver // what the name resolves to, for names
	}{
		{"http://127.0.0.1:" + port + "/hook", nil},
		{"http://localhost:" + port + "/hook", fakeResolver{addr("127.0.0.1"), addr("::1")}},
		{"http://[::1]:" + port + "/hook", nil},
		{"http://[::ffff:127.0.0.1]:" + port + "/hook", nil},
		{"http://0.0.0.0:" + port + "/hook", nil},
		{"http://10.0.0.1:" + port + "/hook", nil},
		{"http://169.254.169.254:" + port + "/latest/meta-data/", nil},
		{"http://[fd00::1]:" + port + "/hook", nil},
		{"http://[64:ff9b::7f00:1]:" + port + "/hook", nil},
		{"http://metadata.internal.test:" + port + "/hook", fakeResolver{addr("169.254.169.254")}},
		{"http://private.internal.test:" + port + "/hook", fakeResolver{addr("10.1.2.3"), addr("172.16.0.1"), addr("192.168.0.1"), addr("100.64.0.1")}},
		{"http://mapped.internal.test:" + port + "/hook", fakeResolver{addr("::ffff:127.0.0.1")}},
	} {
		hc := newClient(ClientConfig{Policy: Policy{AllowHTTP: true}, Resolver: c.resolves}, loopbackOnly(t))
		resp, err := hc.Post(c.url, "application/json", strings.NewReader(`{}`))
		if resp != nil {
			resp.Body.Close()
		}
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want the dialer's refusal", c.url, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the loopback listener accepted %d connections", n)
	}
}

// The client does not follow redirects: a 3xx is the answer.
func TestClientNoRedirects(t *testing.T) {
	t.Parallel()
	var second atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { second.Add(1) }))
	defer target.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	p, _ := Parse("http,127.0.0.0/8")
	resp, err := NewClient(ClientConfig{Policy: p}).Post(first.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || second.Load() != 0 {
		t.Fatalf("status %d, the target got %d requests", resp.StatusCode, second.Load())
	}
}

// With a proxy, every request goes to it (the operator's, trusted, on
// loopback here although no range is allowed) and names the webhook's host
// for the proxy to resolve and filter; the URL checks are the caller's.
func TestClientProxy(t *testing.T) {
	t.Parallel()
	var hosts []string
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.URL.Host)
		mu.Unlock()
	}))
	defer proxy.Close()
	pu, err := ParseProxy(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	hc := newClient(ClientConfig{Policy: Policy{AllowHTTP: true}, Proxy: pu}, loopbackOnly(t))
	resp, err := hc.Post("http://hooks.example.com/hook", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) != 1 || hosts[0] != "hooks.example.com" {
		t.Fatalf("the proxy saw %v", hosts)
	}
	for _, bad := range []string{"socks5://p:1080", "p:3128", "http://"} {
		if _, err := ParseProxy(bad); err == nil {
			t.Errorf("ParseProxy(%q) accepted", bad)
		}
	}
}
