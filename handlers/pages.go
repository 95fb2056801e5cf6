package handlers

import (
	"fmt"
	"strconv"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
	"github.com/seckill/seckill/views/i18n"
)

// now is the process's clock.
func (h *Site) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// homeSlots is how many of the live and upcoming slots the front page shows
// (soonest first); the rest are a click away on /slots.
const homeSlots = 3

// Home shows the shopper's start page: GET /. Its slots and goods come
// from the catalog in memory; a reader who is not signed in gets the page
// rendered once per change and language (sharedPage).
func (h *Site) Home(c *fiber.Ctx) error {
	ctx := c.UserContext()
	packets, coupons, cardsSeq, err := h.homeCards().get(ctx, h.Shelves, h.now())
	if err != nil {
		return err
	}
	version := ""
	if v := h.Shelves.Goods.Version(ctx); v != "" {
		version = v + "/" + strconv.FormatUint(cardsSeq, 10)
	}
	return h.sharedPage(c, "home", version, func(p views.Page) (templ.Component, error) {
		cl, loggedIn := ClaimsOf(c)
		slots, err := h.Shelves.Goods.Slots(ctx)
		if err != nil {
			return nil, err
		}
		v := views.HomeView{RedPackets: packets, Coupons: coupons}
		for _, sl := range slots[:min(len(slots), homeSlots)] {
			gs, err := h.Shelves.Goods.ShopperSlotGoods(ctx, cl, sl.ID)
			if err != nil {
				return nil, err
			}
			if len(gs) > 0 {
				v.Sales = append(v.Sales, views.HomeSlot{Slot: sl, Goods: gs})
			}
		}
		if loggedIn && len(v.Sales) > 0 {
			orders, err := h.Shelves.Goods.MyOrders(ctx, cl.UserID)
			if err != nil {
				return nil, err
			}
			v.Held = views.HeldByGoods(orders)
		}
		p.Title = "Flash sales"
		return views.HomePage(p, v), nil
	})
}

// sharedPage answers a page that every reader who is not signed in reads
// alike: rendered once per version, language and steering switches, then
// served from memory with its ETag (public, for a second). A signed-in
// reader's page (their name, their orders), one that carries a one-time
// message, or a read the catalog does not hold in memory (version "") is
// rendered for this request alone and sent private.
func (h *Site) sharedPage(c *fiber.Ctx, name, version string, make func(p views.Page) (templ.Component, error)) error {
	_, signedIn := ClaimsOf(c)
	if signedIn || version == "" || c.Cookies(flashCookie) != "" {
		comp, err := make(h.page(c, ""))
		if err != nil {
			return err
		}
		body, err := renderBytes(c, comp)
		if err != nil {
			return err
		}
		return sendPrivate(c, fiber.StatusOK, typeHTML, body)
	}
	lang := string(i18n.Of(c.UserContext()))
	key := "page:" + name + "|" + lang + "|" + c.Path()
	d, err := h.docs.get(key, version+"|"+h.switchesKey(), typeHTML, func() ([]byte, error) {
		comp, err := make(h.page(c, ""))
		if err != nil {
			return nil, err
		}
		return renderBytes(c, comp)
	})
	if err != nil {
		return err
	}
	return d.send(c, cachePublic, fiber.HeaderAcceptLanguage, fiber.HeaderCookie)
}

// AdminDashboard (handlers/merchant.go) shows the merchant area's start page.

// ErrorPage renders a friendly HTML error page; web's error handler calls it.
func (h *Site) ErrorPage(c *fiber.Ctx, status int, message string) error {
	return render(c, status, views.ErrorPage(h.page(c, "Something went wrong"), status, message))
}

// switchesKey names the steering switches in force (a page shows a banner
// while one is set), worked out again only when they change.
func (h *Site) switchesKey() string {
	sw := h.Switches.Current()
	if k := h.swKey.Load(); k != nil && k.sw == sw {
		return k.key
	}
	k := &switchesKeyed{sw: sw, key: fmt.Sprintf("%+v", sw)}
	h.swKey.Store(k)
	return k.key
}

type switchesKeyed struct {
	sw  model.Switches
	key string
}
