package node

import (
	"slices"
	"testing"

	utilnet "k8s.io/utils/net"
)

// parseIP reads an address as utilnet.ParseIPSloppy does and writes it as net.IP.String
// does (the input itself when it is written that way already).
func TestParseIP(t *testing.T) {
	for _, s := range []string{
		"10.0.0.1", "010.000.000.001", "0.0.0.0", "255.255.255.255", "::1", "::", "2001:db8::1",
		"2001:DB8::1", "2001:0db8:0000:0000:0000:0000:0000:0001", "::ffff:10.0.0.1", "::ffff:a00:1",
		"::10.0.0.1", "fe80::1%eth0", "", "10.0.0", "10.0.0.256", " 10.0.0.1", "1:2:3:4:5:6:7:8",
		"1:0:0:2:0:0:0:3", "::ffff:010.0.0.1",
	} {
		ip := utilnet.ParseIPSloppy(s)
		got, ok := parseIP(s)
		if ok != (ip != nil) {
			t.Errorf("parseIP(%q) ok = %v, ParseIPSloppy gives %v", s, ok, ip)
			continue
		}
		if !ok {
			continue
		}
		if got.s != ip.String() || got.a.Is4() != utilnet.IsIPv4(ip) || got.a.Is6() != utilnet.IsIPv6(ip) {
			t.Errorf("parseIP(%q) = %s (IPv4 %v), want %s (IPv4 %v)", s, got.s, got.a.Is4(), ip.String(), utilnet.IsIPv4(ip))
		}
	}
}

// The node's addresses: the first valid one, then the first later one of the other family.
func TestNodeIPs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{"bad", "10.0.0.1", "10.0.0.2", "::1", "::2"}, []string{"10.0.0.1", "::1"}},
		{[]string{"::1", "::2", "010.0.0.3"}, []string{"::1", "10.0.0.3"}},
		{[]string{"10.0.0.1", "::ffff:10.0.0.2"}, []string{"10.0.0.1"}},
	} {
		var got []string
		for _, ip := range nodeIPs(tc.in) {
			got = append(got, ip.s)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("nodeIPs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
