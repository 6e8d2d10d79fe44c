package kube

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestRaisedRateLimit(t *testing.T) {
	cases := []struct {
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{0, 0, rest.DefaultQPS * 20, rest.DefaultBurst * 100},   // unset: client-go's defaults, raised
		{-1, -1, rest.DefaultQPS * 20, rest.DefaultBurst * 100}, // as unset
		{2, 3, 40, 300},
		{50, 0, 1000, rest.DefaultBurst * 100},
	}
	for _, tc := range cases {
		qps, burst := RaisedRateLimit(tc.qps, tc.burst)
		if qps != tc.wantQPS || burst != tc.wantBurst {
			t.Errorf("RaisedRateLimit(%v, %v) = %v, %v; want %v, %v", tc.qps, tc.burst, qps, burst, tc.wantQPS, tc.wantBurst)
		}
	}
}

type recordingWarnings struct{ texts []string }

func (r *recordingWarnings) HandleWarningHeader(_ int, _ string, text string) {
	r.texts = append(r.texts, text)
}

// ClientsForConfig raises the rate limit of a copy, leaving the caller's
// configuration as it was, and replaces client-go's warning printer with
// the write-only one.
func TestClientsForConfig(t *testing.T) {
	printer := &recordingWarnings{}
	cfg := &rest.Config{Host: "https://203.0.113.1:6443", QPS: 2, Burst: 3, WarningHandler: printer}
	c, err := ClientsForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != 2 || cfg.Burst != 3 || cfg.WarningHandler != printer || cfg.WrapTransport != nil {
		t.Errorf("the caller's configuration changed: %+v", cfg)
	}
	if c.Config.QPS != 40 || c.Config.Burst != 300 {
		t.Errorf("QPS %v, burst %v; want 40, 300", c.Config.QPS, c.Config.Burst)
	}
	if c.Config.WarningHandler != nil {
		t.Error("client-go's warning handler is still set: every list's deprecation warning would be printed")
	}
	if _, ok := c.Config.WarningHandlerWithContext.(warningHandler); !ok {
		t.Errorf("warning handler %T, want warningHandler", c.Config.WarningHandlerWithContext)
	}
	if c.Config.WrapTransport == nil {
		t.Error("no transport wrapper watches for the priority and fairness header")
	}
	if c.Kube == nil || c.Metadata == nil || c.Dynamic == nil || c.Discovery == nil || c.Aggregator == nil {
		t.Errorf("a client is missing: %+v", c)
	}
	if _, ok := c.Collections.(restCollections); !ok {
		t.Errorf("Collections %T, want restCollections", c.Collections)
	}
}

func TestClientsForConfigError(t *testing.T) {
	_, err := ClientsForConfig(&rest.Config{Host: "https://203.0.113.1:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}})
	if err == nil || !strings.Contains(err.Error(), "building the Kubernetes client") {
		t.Errorf("err %v, want one naming the client it could not build", err)
	}
}

// The handler passes on, for writes only, the warnings kubectl shows
// (code 299, with text), to the sink of the request's context.
func TestWarningHandler(t *testing.T) {
	var got []string
	sink := func(text string) { got = append(got, text) }
	writing := Writing(WithWarnings(context.Background(), sink))
	cases := []struct {
		name string
		ctx  context.Context
		code int
		text string
		want bool
	}{
		{"write", writing, 299, "deprecated", true},
		{"read", WithWarnings(context.Background(), sink), 299, "deprecated", false},
		{"other code", writing, 199, "misc", false},
		{"empty", writing, 299, "", false},
		{"write without a sink", Writing(context.Background()), 299, "deprecated", false},
		{"sink of another type", Writing(context.WithValue(context.Background(), warningSinkKey{}, "not a func")), 299, "x", false},
	}
	for _, tc := range cases {
		got = nil
		warningHandler{}.HandleWarningHeaderWithContext(tc.ctx, tc.code, "-", tc.text)
		if received := len(got) == 1 && got[0] == tc.text; received != tc.want || len(got) > 1 {
			t.Errorf("%s: sink received %q, want it: %v", tc.name, got, tc.want)
		}
	}
}
