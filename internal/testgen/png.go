package testgen

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
)

// pngImage is a real PNG, so counters that price images from the IHDR header see true
// dimensions. Flat UI-like shapes keep the files small even at screenshot sizes.
type pngImage struct {
	w, h int
	raw  int    // encoded size in bytes
	b64  string // standard base64 of the PNG
}

var pngSizes = [][2]int{{1280, 720}, {800, 600}, {512, 512}, {1568, 882}, {64, 64}, {2400, 1350}, {320, 180}, {1024, 1536}}

var palette = color.Palette{
	color.RGBA{0xff, 0xff, 0xff, 0xff}, color.RGBA{0xf3, 0xf4, 0xf6, 0xff},
	color.RGBA{0x1f, 0x29, 0x37, 0xff}, color.RGBA{0x25, 0x63, 0xeb, 0xff},
	color.RGBA{0xdc, 0x26, 0x26, 0xff}, color.RGBA{0x16, 0xa3, 0x4a, 0xff},
	color.RGBA{0x9c, 0xa3, 0xaf, 0xff}, color.RGBA{0xfb, 0xbf, 0x24, 0xff},
}

func makePNG(r *rng, w, h int) *pngImage {
	img := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	fill := func(x0, y0, x1, y1 int, c uint8) {
		x0, y0 = max(x0, 0), max(y0, 0)
		x1, y1 = min(x1, w), min(y1, h)
		for y := y0; y < y1; y++ {
			row := img.Pix[y*img.Stride : y*img.Stride+w]
			for x := x0; x < x1; x++ {
				row[x] = c
			}
		}
	}
	fill(0, 0, w, h, 1)
	fill(0, 0, w, h/14+1, 2) // title bar
	for i, n := 0, r.between(6, 24); i < n; i++ {
		x, y := r.intn(w), r.intn(h)
		fill(x, y, x+r.between(4, w/3+4), y+r.between(2, h/6+2), uint8(r.intn(len(palette))))
	}
	for y := h / 6; y < h-8; y += 14 { // text-like lines
		x := w / 20
		for x < w-w/20 && r.intn(9) != 0 {
			l := r.between(6, 40)
			fill(x, y, x+l, y+3, 2)
			x += l + 5
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding to memory cannot fail
	}
	return &pngImage{w: w, h: h, raw: buf.Len(), b64: base64.StdEncoding.EncodeToString(buf.Bytes())}
}

func (p *pngImage) dataURL() string { return "data:image/png;base64," + p.b64 }
