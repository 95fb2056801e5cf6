package web

import (
	"bytes"
	"regexp"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
)

// UploadLimit is the largest body of a picture upload: the picture
// (goods.MaxImageBytes) and the multipart form around it.
const UploadLimit = goods.MaxImageBytes + 64<<10

// uploadPath matches the routes that take a picture: the API's and the admin page's.
var uploadPath = regexp.MustCompile(`^/(api/)?admin/goods/[0-9]+/image$`)

// errUploadTooLarge is the answer to an upload over UploadLimit.
var errUploadTooLarge = db.Errorf(db.ETOOLARGE, "the picture is larger than 2 MiB")

// bodyLimits are the largest body a request to path may carry and the
// refusal of a larger one: BodyLimit for every route but the picture
// uploads. A refused upload is over drainLimit, so it is never drained: its
// connection closes after the 413 (a client that sends Expect: 100-continue
// reads the 413 without sending the body).
func bodyLimits(path []byte) (limit int, tooLarge error) {
	if bytes.HasSuffix(path, []byte("/image")) && uploadPath.Match(path) {
		return UploadLimit, errUploadTooLarge
	}
	return BodyLimit, errTooLarge
}
