package i18n

// The services' refusals (db.Errorf messages) and the API's own, as the API's
// message and the pages' flashes show them.
func init() {
	add(map[string]string{
		"goods %d not found": "商品 %d 不存在",
	})
}
