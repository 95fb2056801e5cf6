package rdb

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A URL of one host gives client options; one listing several hosts gives
// cluster options with every host, the credentials and the query's options.
func TestParseURL(t *testing.T) {
	tests := []struct {
		url     string
		addr    string   // one host
		addrs   []string // a cluster
		user    string
		pass    string
		dial    time.Duration
		tls     bool
		wantErr string
	}{
		{url: "redis://127.0.0.1:6379/2", addr: "127.0.0.1:6379"},
		{url: "redis://h1:7000,h2:7001,h3:7002", addrs: []string{"h1:7000", "h2:7001", "h3:7002"}},
		{url: "redis://u:p%40ss@h1:7000,h2:7001/0?dial_timeout=2s", addrs: []string{"h1:7000", "h2:7001"}, user: "u", pass: "p@ss", dial: 2 * time.Second},
		{url: "rediss://:secret@h1:7000,h2:7001/", addrs: []string{"h1:7000", "h2:7001"}, pass: "secret", tls: true},
		{url: "redis://h1:7000,h2:7001/3", wantErr: "only database 0"},
		{url: "redis://h1:7000,,h3:7002", wantErr: "empty host"},
		{url: "redis://h1:7000,h2:7001?colour=blue", wantErr: "colour"},
		{url: "http://h1:7000,h2:7001", wantErr: "scheme"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			opt, copt, err := parseURL(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.addr != "" {
				if copt != nil || opt == nil || opt.Addr != tc.addr {
					t.Fatalf("got client %+v cluster %+v, want a client of %s", opt, copt, tc.addr)
				}
				return
			}
			if opt != nil || copt == nil {
				t.Fatalf("got client %+v cluster %+v, want cluster options", opt, copt)
			}
			if !slices.Equal(copt.Addrs, tc.addrs) || copt.Username != tc.user || copt.Password != tc.pass ||
				copt.DialTimeout != tc.dial || (copt.TLSConfig != nil) != tc.tls {
				t.Fatalf("cluster options addrs %v user %q password %q dial %v tls %v, want %v %q %q %v %v",
					copt.Addrs, copt.Username, copt.Password, copt.DialTimeout, copt.TLSConfig != nil, tc.addrs, tc.user, tc.pass, tc.dial, tc.tls)
			}
		})
	}
}
