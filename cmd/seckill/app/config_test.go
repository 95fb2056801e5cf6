package app

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigDefaults(t *testing.T) {
	got, err := ParseConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	if got != want {
		t.Fatalf("defaults (-want +got):\n- %+v\n+ %+v", want, got)
	}
}

func TestConfigFromEnvAndFlags(t *testing.T) {
	got, err := ParseConfig([]string{"-addr", "127.0.0.1:8080", "-demo=false"}, env(map[string]string{
		"ADDR": ":4000", "REDIS_URL": "redis://localhost:6379/2", "DB_PATH": "/tmp/x.db", "ORDER_TTL": "2s",
		"FLUSH_INTERVAL": "250ms", "DEMO": "true", "WEBHOOK_ALLOW_PRIVATE": "1", "SMTP_URL": "smtp://u:p@mail:587",
		"DATABASE_URL": "postgres://app:secret@db:5432/seckill",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Addr != "127.0.0.1:8080" || got.Demo || got.RedisURL != "redis://localhost:6379/2" || got.OrderTTL != 2*time.Second ||
		got.FlushInterval != 250*time.Millisecond || !got.WebhookAllowPrivate || got.DBPath != "/tmp/x.db" || got.SMTPURL == "" ||
		got.DatabaseURL != "postgres://app:secret@db:5432/seckill" {
		t.Fatalf("flags must win over env, env over defaults: %+v", got)
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"ADDR": "nonsense"}, want: "ADDR"},
		{env: map[string]string{"ADDR": ":99999"}, want: "bad port"},
		{env: map[string]string{"REDIS_URL": "http://x"}, want: "REDIS_URL"},
		{env: map[string]string{"REDIS_URL": "redis://h1:7000,h2:7001/2"}, want: "only database 0"},
		{env: map[string]string{"DB_PATH": " "}, want: "DB_PATH"},
		{env: map[string]string{"DATABASE_URL": "mysql://db/seckill"}, want: "DATABASE_URL"},
		{env: map[string]string{"DATABASE_URL": "postgres:///seckill"}, want: "DATABASE_URL"},
		{env: map[string]string{"ORDER_TTL": "soon"}, want: "ORDER_TTL"},
		{env: map[string]string{"ORDER_TTL": "10ms"}, want: "at least 1s"},
		{env: map[string]string{"FLUSH_INTERVAL": "2h"}, want: "FLUSH_INTERVAL"},
		{env: map[string]string{"FLUSH_INTERVAL": "1ms"}, want: "FLUSH_INTERVAL"},
		{env: map[string]string{"SESSION_SECRET": "short"}, want: "SESSION_SECRET"},
		{env: map[string]string{"ADMIN_USERNAME": "a b"}, want: "ADMIN_USERNAME"},
		{env: map[string]string{"ADMIN_PASSWORD": "short"}, want: "ADMIN_PASSWORD"},
		{env: map[string]string{"SMTP_URL": "mail.example.com"}, want: "SMTP_URL"},
		{env: map[string]string{"DEMO": "maybe"}, want: "DEMO"},
		{env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "perhaps"}, want: "WEBHOOK_ALLOW_PRIVATE"},
		{args: []string{"-order-ttl", "x"}, want: "order-ttl"},
		{args: []string{"-nope"}, want: "nope"},
		{args: []string{"extra"}, want: "unexpected argument"},
	} {
		_, err := ParseConfig(tc.args, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("env %v args %v: got %v, want an error mentioning %q", tc.env, tc.args, err, tc.want)
		}
	}
}

// A REDIS_URL listing several hosts names a Redis Cluster and is accepted.
func TestConfigAcceptsClusterURL(t *testing.T) {
	const u = "redis://:secret@h1:7000,h2:7001,h3:7002"
	c, err := ParseConfig(nil, env(map[string]string{"REDIS_URL": u}))
	if err != nil || c.RedisURL != u {
		t.Fatalf("REDIS_URL=%s: %+v, %v", u, c.RedisURL, err)
	}
}

// Flags win: a bad environment value that a flag replaces does not stop the start.
func TestConfigFlagReplacesBadEnvironment(t *testing.T) {
	bad := env(map[string]string{"ORDER_TTL": "soon", "RATE_GRAB": "lots", "DEMO": "maybe"})
	if _, err := ParseConfig([]string{"-order-ttl", "2m", "-rate-grab", "5/s", "-demo=false"}, bad); err != nil {
		t.Fatalf("flags replaced every bad variable, yet: %v", err)
	}
	_, err := ParseConfig([]string{"-order-ttl", "2m"}, bad)
	if err == nil || strings.Contains(err.Error(), "ORDER_TTL") || !strings.Contains(err.Error(), "RATE_GRAB") || !strings.Contains(err.Error(), "DEMO") {
		t.Fatalf("only the variables no flag replaced are errors, got %v", err)
	}
}

func TestConfigRefusesInMemoryDatabase(t *testing.T) {
	for _, p := range []string{":memory:", "file::memory:?cache=shared", "file:x?mode=memory"} {
		if _, err := ParseConfig([]string{"-db-path", p}, env(nil)); err == nil || !strings.Contains(err.Error(), "in-memory") {
			t.Errorf("DB_PATH=%s: %v, want refused as in-memory", p, err)
		}
	}
}
