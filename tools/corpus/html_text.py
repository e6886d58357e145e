"""Plain text from documentation HTML (Sphinx, DocBook): body text and code blocks,
without navigation bars, sidebars, footers, scripts or styles."""

import re
from html.parser import HTMLParser

BLOCK_TAGS = {
    "p", "div", "section", "article", "pre", "table", "tr", "li", "ul", "ol", "dl",
    "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "br", "hr",
    "caption", "figure",
}
VOID_TAGS = {"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr", "source"}
SKIP_TAGS = {"script", "style", "head", "nav", "footer", "title"}
SKIP_CLASSES = {
    "navheader", "navfooter", "sphinxsidebar", "related", "footer", "toc", "headerlink",
    "mobile-nav",
}


class _TextExtractor(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_tag: str | None = None
        self.skip_depth = 0
        self.pre_depth = 0

    def handle_starttag(self, tag, attrs):
        if self.skip_tag is not None:
            if tag == self.skip_tag and tag not in VOID_TAGS:
                self.skip_depth += 1
            return
        classes = set((dict(attrs).get("class") or "").split())
        if tag in SKIP_TAGS or classes & SKIP_CLASSES:
            if tag not in VOID_TAGS:
                self.skip_tag, self.skip_depth = tag, 1
            return
        if tag == "pre":
            self.pre_depth += 1
        if tag in BLOCK_TAGS:
            self.parts.append("\n\n" if tag in ("p", "pre", "h1", "h2", "h3", "h4", "dt") else "\n")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag):
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth == 0:
                    self.skip_tag = None
            return
        if tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if tag in BLOCK_TAGS:
            self.parts.append("\n\n" if tag in ("p", "pre", "h1", "h2", "h3", "h4") else "\n")
        elif tag in ("td", "th"):
            self.parts.append(" | " if tag == "td" else " ")

    def handle_data(self, data):
        if self.skip_tag is not None:
            return
        if self.pre_depth:
            self.parts.append(data)
        else:
            data = re.sub(r"\s+", " ", data)
            if not self.parts or self.parts[-1].endswith(("\n", "- ")):
                data = data.lstrip()
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.parts).split("\n")]
    out: list[str] = []
    blank = 0
    for line in lines:
        stripped = line.strip()
        if stripped in ("", "-"):
            blank += 1
            continue
        if blank and out:
            out.append("")
        blank = 0
        out.append(line)
    return "\n".join(out).strip()
