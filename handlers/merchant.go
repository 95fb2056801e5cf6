package handlers

import (
	"io"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// onlyHidden reports whether the body of PUT /api/admin/goods/{id} or
// /api/admin/slots/{id} carries "hidden" and nothing else ({"hidden": true}),
// and what it asks; a body with other fields is an edit as before.
func onlyHidden(c *fiber.Ctx) (hidden, only bool, err error) {
	var all map[string]any
	if err := bind(c, &all); err != nil {
		return false, false, err
	}
	v, ok := all["hidden"]
	if !ok || len(all) != 1 {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, false, db.FieldErrorf("hidden", "must be true or false")
	}
	return b, true, nil
}

// EndGoods ends the sale of goods now: POST /api/admin/goods/{id}/end.
func (h *GoodsDesk) EndGoods(c *fiber.Ctx) error { return answerByID(c, "goods", h.Goods.EndGoods) }

// EndSlot ends the sale of a slot now: POST /api/admin/slots/{id}/end.
func (h *GoodsDesk) EndSlot(c *fiber.Ctx) error { return answerByID(c, "slot", h.Goods.EndSlot) }

// SlotStats answers a slot's goods with their figures and the totals: GET /api/admin/slots/{id}/stats.
func (h *GoodsDesk) SlotStats(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	sl, sales, err := h.Goods.SlotSales(c.UserContext(), cl, id)
	if err != nil {
		return err
	}
	ss := goods.SlotSalesOf(*sl, sales)
	type goodsStats struct {
		model.Goods
		Stats model.GoodsStats `json:"stats"`
	}
	gs := make([]goodsStats, len(ss.Goods))
	for i, g := range ss.Goods {
		gs[i] = goodsStats{g.Goods, g.Stats}
	}
	return c.JSON(fiber.Map{"slot": ss.Slot, "totals": ss.Totals, "goods": gs})
}

// GoodsSamples answers the goods' one-second samples for its chart: GET /api/admin/goods/{id}/samples.
func (h *GoodsDesk) GoodsSamples(c *fiber.Ctx) error {
	return answerByID(c, "samples", h.Goods.Samples)
}

// SlotSamples answers the samples of every goods of a slot: GET /api/admin/slots/{id}/samples.
func (h *GoodsDesk) SlotSamples(c *fiber.Ctx) error {
	return answerByID(c, "samples", h.Goods.SlotSamples)
}

// uploadedImage reads the multipart field "image" of the request.
func uploadedImage(c *fiber.Ctx) ([]byte, error) {
	fh, err := c.FormFile("image")
	if err != nil {
		return nil, db.FieldErrorf("image", "send the picture as the multipart field \"image\"")
	}
	if fh.Size > goods.MaxImageBytes {
		return nil, db.Errorf(db.ETOOLARGE, "the picture is larger than 2 MiB")
	}
	f, err := fh.Open()
	if err != nil {
		return nil, db.FieldErrorf("image", "could not be read")
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, goods.MaxImageBytes+1))
}

// UploadGoodsImage sets the goods' picture: POST /api/admin/goods/{id}/image (multipart, field "image").
func (h *GoodsDesk) UploadGoodsImage(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	data, err := uploadedImage(c)
	if err != nil {
		return err
	}
	g, err := h.Goods.SetImage(c.UserContext(), cl, id, data)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"goods": g})
}

// Image serves a stored picture by its hash: GET /images/{hash}. The URL
// names the bytes, so they are cached for good and revalidated by ETag.
func (h *Goods) Image(c *fiber.Ctx) error {
	hash := c.Params("hash")
	etag := `"` + hash + `"`
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	// A picture opened on its own (the demo's are SVG) runs nothing and loads nothing.
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		if _, err := h.Goods.Image(c.UserContext(), hash); err != nil {
			return err
		}
		c.Set(fiber.HeaderETag, etag)
		return c.SendStatus(fiber.StatusNotModified)
	}
	img, err := h.Goods.Image(c.UserContext(), hash)
	if err != nil {
		c.Set(fiber.HeaderCacheControl, "no-store")
		return err
	}
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderContentType, img.ContentType)
	return c.Send(img.Data)
}

// AdminUsers lists the accounts: GET /api/admin/users (admin).
func (h *Site) AdminUsers(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	us, err := h.Accounts.Users(c.UserContext(), cl, 200)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"users": us})
}

// ---- pages ----

// AdminDashboard is the merchant area's start page: the live and upcoming
// slots with their totals, the coupons and the red packets: GET /admin/.
func (h *Site) AdminDashboard(c *fiber.Ctx) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	v := views.DashboardView{}
	if v.Slots, err = h.Shelves.Goods.MerchantSales(ctx, cl); err != nil {
		return err
	}
	if v.Coupons, err = h.Shelves.Coupons.ManagedStats(ctx, cl); err != nil {
		return err
	}
	if v.RedPackets, err = h.Shelves.RedPackets.Own(ctx, cl); err != nil {
		return err
	}
	return render(c, fiber.StatusOK, views.AdminDashboard(h.page(c, "Merchant dashboard"), v))
}

// AdminEndGoodsForm ends a goods' sale from its page: POST /admin/goods/{id}/end.
func (h *GoodsDesk) AdminEndGoodsForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	if !confirmed(c) {
		return c.Redirect("/admin/goods/"+strconv.FormatInt(id, 10)+"/end", fiber.StatusSeeOther)
	}
	g, err := h.Goods.EndGoods(c.UserContext(), cl, id)
	return h.afterAction(c, "/admin/goods/"+strconv.FormatInt(id, 10), views.PlaceControls, err, func() string { return "The sale of “" + g.Title + "” has ended." })
}

// AdminHideGoodsForm hides or shows goods: POST /admin/goods/{id}/hidden (hidden=1 or 0).
func (h *GoodsDesk) AdminHideGoodsForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	hide := c.FormValue("hidden") == "1"
	_, err = h.Goods.SetGoodsHidden(c.UserContext(), cl, id, hide)
	return h.afterAction(c, "/admin/goods/"+strconv.FormatInt(id, 10), views.PlaceControls, err, func() string { return hiddenMessage(hide) })
}

// AdminEndSlotForm ends a slot's sale: POST /admin/slots/{id}/end.
func (h *GoodsDesk) AdminEndSlotForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	if !confirmed(c) {
		return c.Redirect("/admin/slots/"+strconv.FormatInt(id, 10)+"/end", fiber.StatusSeeOther)
	}
	_, err = h.Goods.EndSlot(c.UserContext(), cl, id)
	return h.afterAction(c, "/admin/slots/"+strconv.FormatInt(id, 10), views.PlaceControls, err, func() string { return "The slot's sale has ended." })
}

// AdminHideSlotForm hides or shows a slot: POST /admin/slots/{id}/hidden (hidden=1 or 0).
func (h *GoodsDesk) AdminHideSlotForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	hide := c.FormValue("hidden") == "1"
	_, err = h.Goods.SetSlotHidden(c.UserContext(), cl, id, hide)
	return h.afterAction(c, "/admin/slots/"+strconv.FormatInt(id, 10), views.PlaceControls, err, func() string { return hiddenMessage(hide) })
}

// AdminImageForm uploads a goods' picture from its page: POST /admin/goods/{id}/image.
func (h *GoodsDesk) AdminImageForm(c *fiber.Ctx) error {
	cl, id, err := callerAndID(c)
	if err != nil {
		return err
	}
	data, err := uploadedImage(c)
	if err == nil {
		_, err = h.Goods.SetImage(c.UserContext(), cl, id, data)
	}
	return h.afterAction(c, "/admin/goods/"+strconv.FormatInt(id, 10), views.PlaceImage, err, func() string { return "Picture saved." })
}

// afterAction redirects back to path with the action's outcome shown beside
// the form at place: a refusal the merchant can act on in red, a success in
// green; anything else is an error page.
func (h *GoodsDesk) afterAction(c *fiber.Ctx, path, place string, err error, ok func() string) error {
	if _, shown := refusal(err); shown {
		return redirectWithNote(c, path, views.FlashError, place, db.ErrorMessage(err))
	} else if err != nil {
		return err
	}
	return redirectWithNote(c, path, views.FlashSuccess, place, ok())
}

func hiddenMessage(hidden bool) string {
	if hidden {
		return "Hidden from shoppers."
	}
	return "Shown to shoppers again."
}

// AdminUsersPage lists the accounts with the form to add a merchant: GET /admin/users (admin).
func (h *Site) AdminUsersPage(c *fiber.Ctx) error {
	return h.adminUsers(c, fiber.StatusOK, views.UserForm{Role: model.RoleMerchant})
}

func (h *Site) adminUsers(c *fiber.Ctx, status int, form views.UserForm) error {
	cl, err := caller(c)
	if err != nil {
		return err
	}
	us, err := h.Accounts.Users(c.UserContext(), cl, 200)
	if err != nil {
		return err
	}
	return render(c, status, views.AdminUsersPage(h.page(c, "Accounts"), views.AdminUsersView{Users: us, Form: form}))
}

// AdminCreateUserForm handles the new-account form: POST /admin/users (admin).
func (h *Site) AdminCreateUserForm(c *fiber.Ctx) error {
	form := views.UserForm{Username: c.FormValue("username"), Role: c.FormValue("role")}
	u, err := h.Accounts.CreateUser(c.UserContext(), form.Username, c.FormValue("password"), form.Role)
	if status, shown := refusal(err); shown {
		form.Errors, form.Error = mergeFieldErrors(nil, err)
		return h.adminUsers(c, status, form)
	} else if err != nil {
		return err
	}
	return redirectWithFlash(c, "/admin/users", "Account “"+u.Username+"” created as "+u.Role+".")
}
