package samples

import (
	"bytes"
	"fmt"
	"strings"
)

// Documents returns the generated sample documents: plain text, Markdown,
// HTML and one PDF with real text content, and a shop's refund policy (for
// knowledge base examples). The bytes are the same on every
// call.
func Documents() []Sample {
	return []Sample{
		{
			Name:      "nats-notes.txt",
			MediaType: "text/plain",
			Tags:      []string{"nats", "notes"},
			Content: []byte(`Notes on NATS JetStream

NATS is a messaging system built for speed and simplicity. JetStream adds persistence to NATS: streams keep messages on disk and consumers read them at their own pace.

A work-queue stream deletes each message once a consumer acknowledges it. This makes JetStream a good fit for distributing tasks among many workers.

Key-value buckets and object stores are built on top of streams. A key-value bucket keeps the latest value of each key and supports compare-and-set updates.

Object stores split large files into chunks, so a file of any size can be stored in JetStream and read back as a stream.
`),
		},
		{
			Name:      "photography-tips.md",
			MediaType: "text/markdown",
			Tags:      []string{"photography"},
			Content: []byte(`# Photographing sunsets

Sunset light changes fast, so **arrive early** and stay after the sun has set.

## Exposure

- Expose for the sky, not the foreground: a silhouette is better than a washed-out sky.
- Use a tripod when the light fades; long exposures smooth the water.

## Composition

Put the horizon on a third of the frame. A tree, a boat or a person in silhouette gives the picture a subject. See [the rule of thirds](https://example.org/thirds) for more.

` + "```" + `
aperture: f/8
iso: 100
` + "```" + `

The blue hour after sunset often makes the best photographs of a city at night.
`),
		},
		{
			Name:      "forest-report.html",
			MediaType: "text/html",
			Tags:      []string{"forest", "report"},
			Content: []byte(`<!DOCTYPE html>
<html><head><title>Forest survey 2024</title>
<style>body { font-family: sans-serif; }</style>
<script>var tracking = "do not index this";</script>
</head>
<body>
<h1>Forest survey 2024</h1>
<p>The survey counted trees in twelve plots of mixed woodland. Pines and birches made up most of the canopy.</p>
<p>Young trees grew fastest where storms had opened gaps in the canopy &amp; let light reach the ground.</p>
<ul><li>Plots surveyed: 12</li><li>Trees counted: 4,318</li></ul>
<p>The report recommends leaving fallen trees in place, because they shelter insects, fungi and birds.</p>
</body></html>
`),
		},
		{
			Name:      "mesh-overview.pdf",
			MediaType: "application/pdf",
			Tags:      []string{"agentmesh", "overview"},
			Content: PDF("Agent mesh overview",
				"An agent mesh connects independent agents over a message bus.",
				"Each agent announces a typed contract and takes tasks from its queue.",
				"The orchestrator carries file references between agents, never file contents.",
				"Scaling an agent means starting more copies of it."),
		},
		{
			Name:      "refund-policy.md",
			MediaType: "text/markdown",
			Tags:      []string{"policy", "refunds"},
			Content: []byte(`# Refund policy

This policy explains when Northwind Outfitters refunds a purchase and how to ask for a refund.

## Refund window

You can return most items within 30 days of delivery for a full refund. After 30 days and up to 60 days we offer store credit instead of money back.

## Condition of returned items

Items must be unused, with their original tags and packaging. Worn shoes, washed clothing and assembled furniture cannot be returned.

## Items that cannot be refunded

Gift cards, personalised or engraved goods, and perishable food are final sale. Downloadable software is refundable only if it has not been activated.

## How to request a refund

Start a return from the Orders page of your account, or email returns@northwind.example with your order number. We send a prepaid shipping label within two business days.

## Refund processing time

Once the warehouse receives and inspects your return, the refund is issued within 5 business days. Your bank may take another 3 to 10 days to show it on your statement.

## Shipping costs

Original shipping fees are not refunded, except when the item arrived damaged or we sent the wrong item. Return shipping is free for customers in the loyalty programme.

## Damaged or wrong items

Report a damaged or wrong item within 7 days of delivery, with a photo of the damage. We replace it at no cost, or refund it in full including shipping.

## Exchanges

To swap a size or colour, request an exchange instead of a refund: the new item ships as soon as the original is scanned by the carrier.
`),
		},
	}
}

// PDF returns a minimal, valid single-page PDF (version 1.4, Helvetica)
// showing title and then each line below it. Characters outside printable
// ASCII are replaced with '?'.
func PDF(title string, lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT\n/F1 18 Tf\n30 TL\n72 760 Td\n")
	fmt.Fprintf(&content, "(%s) Tj\n", pdfString(title))
	content.WriteString("/F1 11 Tf\nT*\n16 TL\n")
	for _, l := range lines {
		// T* moves to the next line, which text extractors read as a line break.
		fmt.Fprintf(&content, "(%s) Tj\nT*\n", pdfString(l))
	}
	content.WriteString("ET\n")
	stream := content.String()

	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(stream), stream),
	}
	var buf bytes.Buffer
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, obj := range objects {
		offsets[i] = buf.Len()
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", i+1, obj)
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return buf.Bytes()
}

// pdfString escapes s for a PDF literal string.
func pdfString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
