package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// upload posts data as the multipart field "image" to the goods' picture
// route, with the Expect header when one is given.
func (a *testApp) upload(token string, goodsID int64, data []byte, expect ...string) (int, []byte) {
	a.T.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("image", "picture.bin")
	part.Write(data)
	w.Close()
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/admin/goods/%d/image", a.URL, goodsID), &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	client := http.DefaultClient
	if len(expect) > 0 {
		req.Header.Set("Expect", expect[0])
		client = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	}
	res, err := client.Do(req)
	if err != nil {
		a.T.Fatalf("upload: %v", err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

func pngBytes(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func errorCode(t *testing.T, raw []byte) string {
	var e apiError
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("%q is not a JSON error: %v", raw, err)
	}
	return e.Error.Code
}

// A merchant ends goods early: its window closes in the store and in Redis,
// grabs are refused with ended, a second end is a conflict, another
// merchant gets 404.
func TestMerchantEndsGoods(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(10, 1)
	other, _ := a.newMerchant()
	shopper, _ := a.newUser()
	a.grab(shopper, g.ID)

	a.wantError("POST", fmt.Sprintf("/api/admin/goods/%d/end", g.ID), other, nil, 404, "not_found")
	var out struct {
		Goods struct {
			State      string `json:"state"`
			EndedEarly bool   `json:"ended_early"`
		} `json:"goods"`
	}
	if st := a.call("POST", fmt.Sprintf("/api/admin/goods/%d/end", g.ID), mt, nil, &out); st != 200 || out.Goods.State != "ended" || !out.Goods.EndedEarly {
		t.Fatalf("end: %d %+v", st, out)
	}
	late, _ := a.newUser()
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), late, nil, 409, "ended")
	a.wantError("POST", fmt.Sprintf("/api/admin/goods/%d/end", g.ID), mt, nil, 409, "conflict")
	var log struct {
		Entries []struct{ Action, Target string }
	}
	if st := a.call("GET", "/api/admin/audit", a.adminToken(), nil, &log); st != 200 {
		t.Fatalf("audit: %d", st)
	}
	audited := 0
	for _, en := range log.Entries {
		if en.Action == "goods.end" && en.Target == fmt.Sprintf("goods:%d", g.ID) {
			audited++
		}
	}
	if audited != 1 { // the refused second end is not a change
		t.Fatalf("%d goods.end entries in %+v", audited, log.Entries)
	}
	// The shopper's order stays payable: ending stops grabs, not payments.
	o := a.order(shopper, a.grabbedOrderID(shopper))
	var paid struct{ Order orderJSON }
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), shopper, nil, &paid); st != 200 || paid.Order.Status != "paid" {
		t.Fatalf("pay after the end: %d %+v", st, paid.Order)
	}
}

// grabbedOrderID is the ID of the user's one order.
func (a *testApp) grabbedOrderID(token string) int64 {
	a.T.Helper()
	var out struct{ Orders []orderJSON }
	if st := a.call("GET", "/api/me/orders", token, nil, &out); st != 200 || len(out.Orders) != 1 {
		a.T.Fatalf("my orders: %d %+v", st, out.Orders)
	}
	return out.Orders[0].ID
}

// Ending a slot ends every goods of it, upcoming slots too.
func TestMerchantEndsSlot(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	live := a.createSlot(mt, -time.Minute, time.Hour)
	soon := a.createSlot(mt, time.Minute, time.Hour)
	g1 := a.createGoods(mt, live.ID, 5, 1)
	g2 := a.createGoods(mt, soon.ID, 5, 1)
	for _, sl := range []slotJSON{live, soon} {
		var out struct{ Slot slotJSON }
		if st := a.call("POST", fmt.Sprintf("/api/admin/slots/%d/end", sl.ID), mt, nil, &out); st != 200 || out.Slot.State != "ended" {
			t.Fatalf("end slot %d: %d %+v", sl.ID, st, out.Slot)
		}
	}
	u, _ := a.newUser()
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g1.ID), u, nil, 409, "ended")
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g2.ID), u, nil, 409, "ended")
	a.advance(2 * time.Minute) // the upcoming one's planned start passes: still ended
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g2.ID), u, nil, 409, "ended")
	var slots struct{ Slots []slotJSON }
	a.call("GET", "/api/slots", "", nil, &slots)
	for _, s := range slots.Slots {
		if s.ID == live.ID || s.ID == soon.ID {
			t.Fatalf("ended slot %d still listed", s.ID)
		}
	}
}

// Hidden goods and slots are not found by shoppers (API, pages, lists) and
// not grabbable; their owner still sees them, marked hidden; unhiding restores all.
func TestMerchantHides(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(10, 1)
	other, _ := a.newMerchant()
	u, _ := a.newUser()
	path := fmt.Sprintf("/api/admin/goods/%d", g.ID)

	a.wantError("PUT", path, other, map[string]any{"hidden": true}, 404, "not_found")
	a.wantError("PUT", path, mt, map[string]any{"hidden": "yes"}, 400, "invalid")
	var out struct {
		Goods struct {
			Hidden bool `json:"hidden"`
		} `json:"goods"`
	}
	if st := a.call("PUT", path, mt, map[string]any{"hidden": true}, &out); st != 200 || !out.Goods.Hidden {
		t.Fatalf("hide: %d %+v", st, out)
	}
	a.wantError("GET", fmt.Sprintf("/api/goods/%d", g.ID), u, nil, 404, "not_found")
	a.wantError("GET", fmt.Sprintf("/api/goods/%d", g.ID), "", nil, 404, "not_found")
	if st := a.call("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), u, nil, nil); st < 400 {
		t.Fatalf("grab of hidden goods: %d", st)
	}
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d", g.ID), mt, nil, &out); st != 200 || !out.Goods.Hidden {
		t.Fatalf("owner reads hidden goods: %d %+v", st, out)
	}
	if res := a.page(fmt.Sprintf("/goods/%d", g.ID), ""); res != 404 {
		t.Fatalf("shopper page of hidden goods: %d", res)
	}
	var list struct{ Goods []goodsJSON }
	a.call("GET", fmt.Sprintf("/api/slots/%d/goods", g.SlotID), u, nil, &list)
	if len(list.Goods) != 0 {
		t.Fatalf("hidden goods listed: %+v", list.Goods)
	}

	if st := a.call("PUT", path, mt, map[string]any{"hidden": false}, &out); st != 200 || out.Goods.Hidden {
		t.Fatalf("unhide: %d %+v", st, out)
	}
	a.grab(u, g.ID)

	// A hidden slot hides its goods.
	spath := fmt.Sprintf("/api/admin/slots/%d", g.SlotID)
	if st := a.call("PUT", spath, mt, map[string]any{"hidden": true}, nil); st != 200 {
		t.Fatalf("hide slot: %d", st)
	}
	a.wantError("GET", fmt.Sprintf("/api/slots/%d/goods", g.SlotID), "", nil, 404, "not_found")
	a.wantError("GET", fmt.Sprintf("/api/goods/%d", g.ID), "", nil, 404, "not_found")
	u2, _ := a.newUser()
	if st := a.call("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), u2, nil, nil); st < 400 {
		t.Fatalf("grab in a hidden slot: %d", st)
	}
	var slots struct{ Slots []slotJSON }
	a.call("GET", "/api/slots", "", nil, &slots)
	for _, s := range slots.Slots {
		if s.ID == g.SlotID {
			t.Fatal("hidden slot listed")
		}
	}
	if st := a.call("PUT", spath, mt, map[string]any{"hidden": false}, nil); st != 200 {
		t.Fatalf("unhide slot: %d", st)
	}
	a.grab(u2, g.ID)
}

// page GETs an HTML page and returns its status.
func (a *testApp) page(path, token string) int {
	a.T.Helper()
	req, _ := http.NewRequest("GET", a.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Pictures: type by content, size cap, another merchant's goods 404, served
// content-addressed with caching headers and 304 on If-None-Match.
func TestMerchantImages(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(10, 1)
	other, _ := a.newMerchant()
	pic := pngBytes(t)
	if html := a.html(fmt.Sprintf("/goods/%d", g.ID)); !strings.Contains(html, fmt.Sprintf(`data-testid="goods-placeholder-%d"`, g.ID)) {
		t.Fatal("goods without a picture shows no placeholder")
	}

	if st, raw := a.upload(mt, g.ID, []byte("<svg xmlns='http://www.w3.org/2000/svg'></svg>")); st != 400 || errorCode(t, raw) != "invalid" {
		t.Fatalf("svg upload: %d %s", st, raw)
	}
	if st, raw := a.upload(mt, g.ID, []byte("just some text, not a picture")); st != 400 || errorCode(t, raw) != "invalid" {
		t.Fatalf("text upload: %d %s", st, raw)
	}
	big := append(append([]byte{}, pic...), make([]byte, 2<<20)...) // a PNG header, over 2 MiB
	if st, raw := a.upload(mt, g.ID, big); st != 413 || errorCode(t, raw) != "too_large" {
		t.Fatalf("too large upload: %d %s", st, raw)
	}
	// Over the route's body limit the body is not read: a client asking
	// before it sends (Expect: 100-continue) gets the 413 instead of a 100.
	huge := make([]byte, 2<<20+100<<10)
	copy(huge, pic)
	if st, raw := a.upload(mt, g.ID, huge, "100-continue"); st != 413 || errorCode(t, raw) != "too_large" {
		t.Fatalf("upload over the body limit: %d %s", st, raw)
	}
	if st, raw := a.upload(other, g.ID, pic); st != 404 || errorCode(t, raw) != "not_found" {
		t.Fatalf("other merchant's upload: %d %s", st, raw)
	}
	if got := a.goods(g.ID); got.Remaining != 10 {
		t.Fatalf("goods changed: %+v", got)
	}
	var img struct {
		ImageURL string `json:"image_url"`
	}
	var r0 struct{ Goods json.RawMessage }
	a.call("GET", fmt.Sprintf("/api/goods/%d", g.ID), "", nil, &r0)
	json.Unmarshal(r0.Goods, &img)
	if img.ImageURL != "" {
		t.Fatalf("a refused upload set the picture: %q", img.ImageURL)
	}

	// Up to 2 MiB is taken, far over the 64 KiB of other bodies (the type is read from the first bytes).
	if st, raw := a.upload(mt, g.ID, append(append([]byte{}, pic...), make([]byte, 2<<20-len(pic))...)); st != 200 {
		t.Fatalf("2 MiB upload: %d %s", st, raw)
	}
	st, raw := a.upload(mt, g.ID, pic)
	if st != 200 {
		t.Fatalf("upload: %d %s", st, raw)
	}
	var up struct{ Goods json.RawMessage }
	json.Unmarshal(raw, &up)
	json.Unmarshal(up.Goods, &img)
	if !strings.HasPrefix(img.ImageURL, "/images/") {
		t.Fatalf("image_url %q", img.ImageURL)
	}
	res, err := http.Get(a.URL + img.ImageURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	h := res.Header
	if res.StatusCode != 200 || !bytes.Equal(body, pic) || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(h.Get("Cache-Control"), "immutable") || h.Get("ETag") == "" || h.Get("Set-Cookie") != "" {
		t.Fatalf("serve: %d %d bytes %v", res.StatusCode, len(body), h)
	}
	req, _ := http.NewRequest("GET", a.URL+img.ImageURL, nil)
	req.Header.Set("If-None-Match", h.Get("ETag"))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", res.StatusCode)
	}
	if html := a.html(fmt.Sprintf("/goods/%d", g.ID)); !strings.Contains(html, `src="`+img.ImageURL+`"`) {
		t.Fatalf("the goods page does not show the picture %s", img.ImageURL)
	}
	if html := a.html(fmt.Sprintf("/slots/%d", g.SlotID)); !strings.Contains(html, `src="`+img.ImageURL+`"`) {
		t.Fatalf("the slot page does not show the picture %s", img.ImageURL)
	}
	if res := a.page("/images/"+strings.Repeat("0", 64), ""); res != 404 {
		t.Fatalf("unknown picture: %d", res)
	}
}

// A slot's totals are the sums of its goods' live figures.
func TestMerchantSlotTotals(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g1 := a.createGoods(mt, sl.ID, 5, 2)
	g2 := a.createGoods(mt, sl.ID, 7, 2)
	u, _ := a.newUser()
	a.grab(u, g1.ID)
	o := a.grab(u, g2.ID)
	a.grab(u, g2.ID)
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), u, nil, nil); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	var out struct {
		Totals struct {
			Stock, Remaining, Sold, Unpaid, Paid int64
			RevenueCents                         int64 `json:"revenue_cents"`
		}
	}
	if st := a.call("GET", fmt.Sprintf("/api/admin/slots/%d/stats", sl.ID), mt, nil, &out); st != 200 {
		t.Fatalf("slot stats: %d", st)
	}
	tt := out.Totals
	if tt.Stock != 12 || tt.Remaining != 9 || tt.Sold != 3 || tt.Unpaid != 2 || tt.Paid != 1 || tt.RevenueCents != 2500 {
		t.Fatalf("totals %+v", tt)
	}
	other, _ := a.newMerchant()
	a.wantError("GET", fmt.Sprintf("/api/admin/slots/%d/stats", sl.ID), other, nil, 404, "not_found")
}

// The admin lists accounts; merchants may not.
func TestAdminListsUsers(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	var out struct {
		Users []struct{ Username, Role string }
	}
	if st := a.call("GET", "/api/admin/users", a.adminToken(), nil, &out); st != 200 || len(out.Users) < 2 || out.Users[0].Role != "admin" {
		t.Fatalf("users: %d %+v", st, out)
	}
	a.wantError("GET", "/api/admin/users", mt, nil, 403, "forbidden")
}

// The chart samples reach the goods' merchant and admins, never another
// merchant or a shopper, and nobody can subscribe to a merchant's topic.
func TestMerchantSamplesAreTheOwners(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(10, 1)
	other, otherID := a.newMerchant()
	shopper, _ := a.newUser()
	owner, admin, stranger, watcher := dialWS(t, a.URL, mt), dialWS(t, a.URL, a.adminToken()), dialWS(t, a.URL, other), dialWS(t, a.URL, shopper)
	subscribe(t, watcher, fmt.Sprintf("goods:%d", g.ID))
	// The hub holds each socket once it answers an op; a goods topic is a harmless one.
	for _, c := range []*websocket.Conn{owner, admin, stranger} {
		subscribe(t, c, fmt.Sprintf("goods:%d", g.ID))
	}
	a.grab(shopper, g.ID)
	a.advance(time.Second)
	isSample := func(ev map[string]any) bool {
		s, _ := ev["sample"].(map[string]any)
		return ev["type"] == "sample" && s["goods_id"] == float64(g.ID) && s["unpaid"] == float64(1)
	}
	waitEvent(t, owner, isSample)
	waitEvent(t, admin, isSample)
	// Every socket was sent the sample before the owner read it; what the
	// others read before answering one more op is all they were sent.
	for name, c := range map[string]*websocket.Conn{"another merchant": stranger, "a shopper": watcher} {
		if err := c.WriteJSON(map[string]string{"op": "subscribe", "topic": fmt.Sprintf("merchant:%d", otherID)}); err != nil {
			t.Fatal(err)
		}
		ev := waitEvent(t, c, func(ev map[string]any) bool {
			return ev["type"] == "sample" || ev["type"] == "error" || ev["type"] == "subscribed"
		})
		if ev["type"] != "error" {
			t.Fatalf("%s: %v, want the subscribe to a merchant topic refused and no sample", name, ev)
		}
	}
}

// html GETs a page anonymously and returns its body.
func (a *testApp) html(path string) string {
	a.T.Helper()
	res, err := http.Get(a.URL + path)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		a.T.Fatalf("GET %s: %d", path, res.StatusCode)
	}
	return string(b)
}
