// Debian builds libxml2 with ICU, and its headers would then bring in the system's ICU headers,
// whose enums clash with the ICU that Foundation ships in any file importing both. Nothing here
// touches the encoding handlers ICU adds fields to (only pointers to them pass through).
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
// XForms written from definitions (SurveyXForm's XFormWriter): escaping is libxml2's, never hand-made.
#include <libxml/xmlwriter.h>

// xmlFree is a global function pointer, which Swift 6 reads as shared mutable state: one
// function that frees what libxml2 allocated for a caller.
static inline void cxml_free(void *p) { xmlFree(p); }

// An attribute's value (entity references are never substituted: documents with a DTD are refused).
static inline xmlChar *cxml_attribute_value(xmlAttrPtr a) {
    return a->children ? xmlNodeListGetString(a->doc, a->children, 1) : xmlStrdup((const xmlChar *)"");
}
