package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A reminder refused on a channel names the channel as people write it:
// "SMS" and "WeChat" in English, 短信 and 微信 in Chinese, never "sms" or
// "wechat" (for goods, which remind in the app only, and for coupons,
// whose SMS and WeChat reminders need a provider).
func TestReminderNotesNameChannelsProperly(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	g := a.createGoods(mt, a.createSlot(mt, 2*time.Hour, time.Hour).ID, 10, 1)
	start := a.Clock.Now().Add(2 * time.Hour)
	cp := a.couponCreate(mt, "Later deal", 10, 1, start, start.Add(time.Hour))
	token, _ := a.newUser()
	refuse := func(path, channel, lang string) string {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"minutes_before": 10, "channel": channel})
		req, _ := http.NewRequest("PUT", a.URL+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept-Language", lang)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var e apiError
		if json.Unmarshal(raw, &e); res.StatusCode < 400 || e.Error.Message == "" {
			t.Fatalf("PUT %s on %s: %d %s, want a refusal", path, channel, res.StatusCode, raw)
		}
		return e.Error.Message
	}
	for _, path := range []string{fmt.Sprintf("/api/goods/%d/reminders", g.ID), fmt.Sprintf("/api/coupons/%d/reminders", cp.ID)} {
		for channel, want := range map[string][2]string{"sms": {"SMS", "短信"}, "wechat": {"WeChat", "微信"}} {
			if msg := refuse(path, channel, "en"); !strings.HasPrefix(msg, want[0]+" reminders") {
				t.Errorf("%s on %s in English: %q, want it to start %q", path, channel, msg, want[0]+" reminders")
			}
			if msg := refuse(path, channel, "zh-CN"); !strings.Contains(msg, want[1]) || strings.Contains(strings.ToLower(msg), channel) {
				t.Errorf("%s on %s in Chinese: %q, want %s", path, channel, msg, want[1])
			}
		}
	}
}
