package fileagent

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// MaxExtractBytes bounds how much text ExtractText returns; the rest of a
// long document is cut.
const MaxExtractBytes = 1 << 20

// Media types ExtractText reads.
const (
	MediaPlain    = "text/plain"
	MediaMarkdown = "text/markdown"
	MediaHTML     = "text/html"
	MediaPDF      = "application/pdf"
)

var (
	// ErrUnsupported reports a document of a media type ExtractText cannot read.
	ErrUnsupported = errors.New("unsupported document type (want text/plain, text/markdown, text/html or application/pdf)")
	// ErrCorruptDocument reports a document whose content does not parse as its media type.
	ErrCorruptDocument = errors.New("corrupt document")
)

// DocumentType returns the document media type of a file from its declared
// media type (parameters such as charset dropped) and, when that is generic,
// its filename's extension. It returns "" for files that are not documents.
func DocumentType(mediaType, filename string) string {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(mediaType))
	}
	switch strings.ToLower(path.Ext(filename)) {
	case ".md", ".markdown":
		if mt == "" || mt == MediaPlain || mt == "application/octet-stream" {
			return MediaMarkdown
		}
	case ".html", ".htm":
		if mt == "" || mt == MediaPlain || mt == "application/octet-stream" {
			return MediaHTML
		}
	case ".pdf":
		if mt == "" || mt == "application/octet-stream" {
			return MediaPDF
		}
	case ".txt", ".text":
		if mt == "" || mt == "application/octet-stream" {
			return MediaPlain
		}
	}
	switch mt {
	case MediaPlain, MediaMarkdown, "text/x-markdown", MediaHTML, "application/xhtml+xml", MediaPDF:
		if mt == "text/x-markdown" {
			return MediaMarkdown
		}
		if mt == "application/xhtml+xml" {
			return MediaHTML
		}
		return mt
	}
	return ""
}

// ExtractText returns the readable text of a document: plain text as it is
// (invalid UTF-8 replaced), Markdown without its markup, HTML without tags,
// scripts and styles, and the text of every page of a PDF. mediaType is a
// type DocumentType returns. The text is cut at MaxExtractBytes.
func ExtractText(content []byte, mediaType string) (string, error) {
	var text string
	switch mediaType {
	case MediaPlain:
		text = string(content)
	case MediaMarkdown:
		text = markdownText(string(content))
	case MediaHTML:
		text = htmlText(string(content))
	case MediaPDF:
		t, err := pdfText(content)
		if err != nil {
			return "", err
		}
		text = t
	default:
		return "", fmt.Errorf("%w: %q", ErrUnsupported, mediaType)
	}
	text = Cut(strings.ToValidUTF8(text, "\uFFFD"), MaxExtractBytes)
	return strings.TrimSpace(text), nil
}

// Cut returns s cut to at most n bytes, at a character boundary.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// PDFTimeout bounds the text extraction of one PDF. The PDF library can spin
// for a long time on some malformed files; past this the document is
// reported as corrupt instead of holding the task until its deadline. (The
// library cannot be interrupted, so its goroutine finishes on its own.)
var PDFTimeout = 10 * time.Second

// pdfText reads every page's text within PDFTimeout.
func pdfText(content []byte) (string, error) {
	type out struct {
		text string
		err  error
	}
	done := make(chan out, 1)
	go func() {
		t, err := pdfTextNow(content)
		done <- out{t, err}
	}()
	select {
	case o := <-done:
		return o.text, o.err
	case <-time.After(PDFTimeout):
		return "", fmt.Errorf("%w: PDF text extraction took longer than %s; the file is probably malformed", ErrCorruptDocument, PDFTimeout)
	}
}

// pdfTextNow reads every page's text. The PDF library panics on some
// malformed files; that is turned into an ErrCorruptDocument error.
func pdfTextNow(content []byte) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: PDF: %v", ErrCorruptDocument, r)
		}
	}()
	if !bytes.HasPrefix(bytes.TrimLeft(content, " \t\r\n"), []byte("%PDF-")) {
		return "", fmt.Errorf("%w: PDF does not start with %%PDF-", ErrCorruptDocument)
	}
	r, err := pdf.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return "", fmt.Errorf("%w: PDF: %v", ErrCorruptDocument, err)
	}
	tr, err := r.GetPlainText()
	if err != nil {
		return "", fmt.Errorf("%w: PDF: %v", ErrCorruptDocument, err)
	}
	b, err := io.ReadAll(io.LimitReader(tr, MaxExtractBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: PDF: %v", ErrCorruptDocument, err)
	}
	return string(b), nil
}

var (
	mdFence     = regexp.MustCompile("(?m)^\\s*(```|~~~).*$")
	mdImage     = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink      = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	mdHeading   = regexp.MustCompile(`(?m)^\s{0,3}#{1,6}\s+`)
	mdListItem  = regexp.MustCompile(`(?m)^\s*([-*+]|\d+[.)])\s+`)
	mdQuote     = regexp.MustCompile(`(?m)^\s*>\s?`)
	mdEmphasis  = regexp.MustCompile(`(\*\*|__|\*|_|~~|` + "`" + `)`)
	mdRule      = regexp.MustCompile(`(?m)^\s*([-*_]\s*){3,}$`)
	mdHTMLTag   = regexp.MustCompile(`<[^>]+>`)
	blankLines  = regexp.MustCompile(`\n{3,}`)
	spaceRuns   = regexp.MustCompile(`[ \t\f\v]+`)
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
)

func markdownText(s string) string {
	s = mdFence.ReplaceAllString(s, "")
	s = mdRule.ReplaceAllString(s, "")
	s = mdImage.ReplaceAllString(s, "$1")
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdHeading.ReplaceAllString(s, "")
	s = mdListItem.ReplaceAllString(s, "")
	s = mdQuote.ReplaceAllString(s, "")
	s = mdHTMLTag.ReplaceAllString(s, "")
	s = mdEmphasis.ReplaceAllString(s, "")
	return tidy(s)
}

// blockTags end a line of text when they open or close.
var blockTags = map[string]bool{
	"p": true, "div": true, "br": true, "li": true, "ul": true, "ol": true, "tr": true, "table": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "title": true,
	"section": true, "article": true, "header": true, "footer": true, "blockquote": true, "pre": true, "hr": true,
}

// htmlText strips tags, drops the content of script, style and other
// non-text elements, decodes entities and keeps block boundaries as lines.
func htmlText(s string) string {
	s = htmlComment.ReplaceAllString(s, " ")
	var b strings.Builder
	for len(s) > 0 {
		lt := strings.IndexByte(s, '<')
		if lt < 0 {
			b.WriteString(html.UnescapeString(s))
			break
		}
		b.WriteString(html.UnescapeString(s[:lt]))
		s = s[lt:]
		gt := strings.IndexByte(s, '>')
		if gt < 0 {
			break // an unterminated tag: drop the rest
		}
		tag := s[1:gt]
		s = s[gt+1:]
		name, closing := tagName(tag)
		if name == "" {
			continue
		}
		if blockTags[name] {
			b.WriteByte('\n')
		}
		if !closing && (name == "script" || name == "style" || name == "noscript" || name == "template" || name == "svg") {
			end := strings.Index(strings.ToLower(s), "</"+name)
			if end < 0 {
				break
			}
			s = s[end:]
		}
	}
	return tidy(b.String())
}

// tagName returns the lower-case element name of a tag's inside ("p class=x",
// "/p", "br/") and whether it is a closing tag; "" for declarations.
func tagName(tag string) (string, bool) {
	closing := strings.HasPrefix(tag, "/")
	tag = strings.TrimPrefix(tag, "/")
	if tag == "" || tag[0] == '!' || tag[0] == '?' {
		return "", false
	}
	end := strings.IndexAny(tag, " \t\r\n/")
	if end < 0 {
		end = len(tag)
	}
	return strings.ToLower(tag[:end]), closing
}

// tidy collapses runs of spaces and blank lines.
func tidy(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = spaceRuns.ReplaceAllString(s, " ")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	s = strings.Join(lines, "\n")
	return blankLines.ReplaceAllString(s, "\n\n")
}
