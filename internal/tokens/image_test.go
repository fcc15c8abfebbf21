package tokens

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

func testImage(w, h int) image.Image {
	m := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	for i := range m.Pix {
		m.Pix[i] = uint8(i % 2)
	}
	return m
}

func encodePNG(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, testImage(w, h)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, testImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testImage(w, h), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withAppSegments puts APP1 segments of total size n after a JPEG's SOI marker, as EXIF
// and XMP data do, pushing the frame header far from the start.
func withAppSegments(jpg []byte, n int) []byte {
	out := append([]byte{}, jpg[:2]...)
	for n > 0 {
		size := min(n, 65533)
		out = append(out, 0xFF, 0xE1)
		out = binary.BigEndian.AppendUint16(out, uint16(size+2))
		out = append(out, bytes.Repeat([]byte{0xFF}, size)...) // 0xFF bodies: a naive scan would stop on them
		n -= size
	}
	return append(out, jpg[2:]...)
}

// webp builds a RIFF WebP file whose first chunk is fourcc with the given payload.
func webp(fourcc string, payload []byte) []byte {
	payload = append(payload, make([]byte, 32)...) // a real file has image data here
	var b []byte
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(4+8+len(payload)))
	b = append(b, "WEBP"...)
	b = append(b, fourcc...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

func webpVP8X(w, h int) []byte {
	p := []byte{0x10, 0, 0, 0} // alpha flag, reserved
	p = append(p, byte(w-1), byte((w-1)>>8), byte((w-1)>>16))
	p = append(p, byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
	return webp("VP8X", p)
}

func webpVP8L(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14 | 1<<28 // alpha_is_used
	return webp("VP8L", binary.LittleEndian.AppendUint32([]byte{0x2f}, bits))
}

func webpVP8(w, h int) []byte {
	p := []byte{0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a}          // key frame tag, start code
	p = binary.LittleEndian.AppendUint16(p, uint16(w)|1<<14) // scale bits must be masked off
	p = binary.LittleEndian.AppendUint16(p, uint16(h)|2<<14)
	return webp("VP8 ", p)
}

func wrap(s string, n int, sep string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + sep)
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

func TestImageDimensions(t *testing.T) {
	jpg := encodeJPEG(t, 17, 9)
	images := []struct {
		name string
		data []byte
		w, h int
	}{
		{"png", encodePNG(t, 3, 2), 3, 2},
		{"png large", encodePNG(t, 1920, 1080), 1920, 1080},
		{"gif", encodeGIF(t, 5, 7), 5, 7},
		{"jpeg", jpg, 17, 9},
		{"jpeg large", encodeJPEG(t, 1000, 700), 1000, 700},
		{"jpeg after 100 KB of APP segments", withAppSegments(jpg, 100_000), 17, 9},
		{"jpeg with fill bytes", append([]byte{0xFF, 0xD8, 0xFF, 0xFF, 0xFF}, jpg[3:]...), 17, 9},
		{"webp VP8X", webpVP8X(1000, 600), 1000, 600},
		{"webp VP8X max", webpVP8X(1<<24, 3), 1 << 24, 3},
		{"webp VP8L", webpVP8L(4000, 3000), 4000, 3000},
		{"webp VP8", webpVP8(640, 480), 640, 480},
	}
	for _, img := range images {
		std := base64.StdEncoding.EncodeToString(img.data)
		variants := map[string]string{
			"std":         std,
			"data url":    "data:image/png;base64," + std,
			"wrapped":     wrap(std, 76, "\r\n"),
			"spaced":      "  \n" + wrap(std, 5, " \t"),
			"url-safe":    base64.RawURLEncoding.EncodeToString(img.data),
			"data url ws": "data:image/jpeg;name=x.jpg;base64," + wrap(std, 64, "\n"),
		}
		for vname, b64 := range variants {
			w, h, ok := ImageDimensions(b64)
			if !ok || w != img.w || h != img.h {
				t.Errorf("%s, %s: ImageDimensions = %d, %d, %v; want %d, %d", img.name, vname, w, h, ok, img.w, img.h)
			}
		}
	}
}

// TestImageDimensionsPrefixOnly shows that only the header is decoded: what follows it
// may be anything, or missing.
func TestImageDimensionsPrefixOnly(t *testing.T) {
	pngB64 := base64.StdEncoding.EncodeToString(encodePNG(t, 640, 480))
	for name, b64 := range map[string]string{
		"header only":        pngB64[:32], // 24 bytes: signature and IHDR's size fields
		"corrupt after head": pngB64[:32] + strings.Repeat("*", 1<<20),
	} {
		if w, h, ok := ImageDimensions(b64); !ok || w != 640 || h != 480 {
			t.Errorf("%s: ImageDimensions = %d, %d, %v; want 640, 480", name, w, h, ok)
		}
	}
}

func TestImageDimensionsRejects(t *testing.T) {
	jpg := encodeJPEG(t, 17, 9)
	sos := bytes.Index(jpg, []byte{0xFF, 0xDA})
	sof := bytes.Index(jpg, []byte{0xFF, 0xC0})
	gifZero := encodeGIF(t, 5, 7)
	gifZero[6], gifZero[7] = 0, 0
	b64 := base64.StdEncoding.EncodeToString
	for name, s := range map[string]string{
		"empty":                        "",
		"text":                         "hello world",
		"not base64":                   "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
		"data url no comma":            "data:image/png;base64" + b64(encodePNG(t, 3, 2)),
		"png cut off":                  b64(encodePNG(t, 3, 2))[:20],
		"gif zero width":               b64(gifZero),
		"jpeg cut before frame header": b64(jpg[:sof]),
		"jpeg scan before frame":       b64(append(append([]byte{}, jpg[:sof]...), jpg[sos:]...)),
		"jpeg bad marker":              b64(append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0x12}, jpg[2:]...)),
		"riff not webp":                b64(append([]byte("RIFF\x00\x00\x00\x00WAVEfmt "), make([]byte, 40)...)),
		"bmp":                          b64(append([]byte("BM"), make([]byte, 60)...)),
	} {
		if w, h, ok := ImageDimensions(s); ok {
			t.Errorf("%s: ImageDimensions = %d, %d, true; want false", name, w, h)
		}
	}
}

func TestAnthropicImageTokens(t *testing.T) {
	for _, tc := range []struct{ w, h, want int }{
		{1, 1, 1},
		{200, 200, 54},     // 40,000 px / 750 = 53.3
		{1000, 1000, 1334}, // 1,000,000 / 750 = 1333.3
		{1092, 1092, 1590}, // the largest square left as it is
		{1568, 100, 210},   // long edge at the limit: 156,800 / 750 = 209.1
		{3136, 100, 105},   // halved to 1568x50: 78,400 / 750 = 104.5
		{3000, 2000, 1599}, // 1568x1045, then 1341x894 for the area limit
		{8000, 8000, 1599}, // 1568x1568, then 1095x1095: 1,199,025 / 750 = 1598.7
		{0, 500, DefaultAnthropicImageTokens},
		{500, -1, DefaultAnthropicImageTokens},
	} {
		if got := AnthropicImageTokens(tc.w, tc.h); got != tc.want {
			t.Errorf("AnthropicImageTokens(%d, %d) = %d, want %d", tc.w, tc.h, got, tc.want)
		}
		if got := AnthropicImageTokens(tc.h, tc.w); got != tc.want && tc.w > 0 && tc.h > 0 {
			t.Errorf("AnthropicImageTokens(%d, %d) = %d, want %d (transposed)", tc.h, tc.w, got, tc.want)
		}
	}
	if DefaultAnthropicImageTokens != 1600 {
		t.Errorf("DefaultAnthropicImageTokens = %d", DefaultAnthropicImageTokens)
	}
}

func TestOpenAIImageTokens(t *testing.T) {
	for _, tc := range []struct {
		w, h   int
		detail string
		want   int
	}{
		{4096, 4096, "low", 85},
		{0, 0, "low", 85},
		{100, 100, "LOW", 85},
		{512, 512, "high", 255},   // one tile, never scaled up
		{513, 512, "high", 425},   // two tiles
		{1024, 1024, "high", 765}, // 768x768: 4 tiles
		{1024, 1024, "auto", 765},
		{1024, 1024, "", 765},
		{2048, 4096, "high", 1105}, // 1024x2048, then 768x1536: 6 tiles
		{4096, 8192, "high", 1105}, // the same after fitting in 2048x2048
		{768, 2048, "high", 1445},  // 8 tiles: the most an image can cost
		{1920, 1080, "high", 1105}, // 1365x768: 3x2 tiles
		{0, 1080, "high", DefaultOpenAIImageTokens},
	} {
		if got := OpenAIImageTokens(tc.w, tc.h, tc.detail); got != tc.want {
			t.Errorf("OpenAIImageTokens(%d, %d, %q) = %d, want %d", tc.w, tc.h, tc.detail, got, tc.want)
		}
	}
	if DefaultOpenAIImageTokens != 1445 {
		t.Errorf("DefaultOpenAIImageTokens = %d", DefaultOpenAIImageTokens)
	}
}
