#include <libxml/parser.h>
#include <libxml/tree.h>

// xmlFree is a global function pointer, which Swift 6 reads as shared mutable state: one
// function that frees what libxml2 allocated for a caller.
static inline void cxml_free(void *p) { xmlFree(p); }

// An attribute's value (entity references are never substituted: documents with a DTD are refused).
static inline xmlChar *cxml_attribute_value(xmlAttrPtr a) {
    return a->children ? xmlNodeListGetString(a->doc, a->children, 1) : xmlStrdup((const xmlChar *)"");
}
