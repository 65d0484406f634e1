import org.javarosa.core.model.FormDef;
import org.javarosa.core.model.GroupDef;
import org.javarosa.core.model.IFormElement;
import org.javarosa.core.model.QuestionDef;
import org.javarosa.core.model.condition.EvaluationContext;
import org.javarosa.core.model.condition.IFunctionHandler;
import org.javarosa.core.model.instance.CsvExternalInstance;
import org.javarosa.core.model.instance.TreeElement;
import org.javarosa.core.model.instance.TreeReference;
import org.javarosa.core.reference.Reference;
import org.javarosa.core.reference.ReferenceFactory;
import org.javarosa.core.reference.ReferenceManager;
import org.javarosa.xpath.expr.XPathFuncExpr;
import org.javarosa.core.services.PropertyManager;
import org.javarosa.core.services.PrototypeManager;
import org.javarosa.model.xform.XFormsModule;
import org.javarosa.xform.parse.XFormParser;
import org.javarosa.xform.util.XFormUtils;
import org.opendatakit.validate.FormValidator;
import org.opendatakit.validate.StubPropertyManager;
import org.opendatakit.validate.StubReferenceFactory;
import org.opendatakit.validate.StubSetGeopointActionHandler;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;

/**
 * An XForm as ODK Validate loads it (the same set-up: its prototypes, property manager, reference
 * factory, setgeopoint stub, and its stand-in for intersects()), with what the filler and the
 * judge need to know of its structure: its questions and repeats by path, the questions that give
 * a repeat its count, the questions whose logic depends on the moment (today(), now(), random(),
 * uuid(), once()), and what each file question accepts.
 *
 * The files the form names (as Collect downloads them from the form's manifest) are written to a
 * directory of the form's own; `jr://file-csv/…` and `jr://file/…` resolve there, so JavaRosa
 * reads a CSV file's secondary instance with its own parser (`CsvExternalInstance`: the delimiter
 * from the first line, a byte order mark dropped), as Collect does. pulldata(), which Collect
 * implements outside JavaRosa, is answered as Collect answers it: the named column of the first
 * row of `<name>.csv` whose key column is the value, else "". A form without that file keeps ODK
 * Validate's stand-in (its first argument). Every other reference is ODK Validate's stub.
 */
final class LoadedForm {
    final byte[] xform;
    /** Generic paths (`/data/group/q`, no indices) of the questions, in form order. */
    final Map<String, QuestionDef> questions = new LinkedHashMap<>();
    /** Generic paths of the repeats. */
    final Map<String, GroupDef> repeats = new LinkedHashMap<>();
    /** Generic paths of the nodes a repeat's jr:count reads. */
    final Set<String> countTargets = new HashSet<>();
    /** Generic paths of nodes whose bind's relevant, required, constraint or calculate depends on the moment or the device. */
    private final Set<String> momentBound = new HashSet<>();

    /** The directory of this form's files (null: it names none). */
    private final Path media;
    /** pulldata()'s tables, parsed by JavaRosa's CSV reader on first use. */
    private final Map<String, TreeElement> tables = new HashMap<>();
    /** Generic paths of the file questions, with the media types each accepts (`image/jpeg`, `image/*`). */
    final Map<String, List<String>> accepts = new HashMap<>();

    /**
     * A repeat's counts that a JSON definition's XForm carries in surveyd's namespace
     * (`surveyd:minCount`, `surveyd:maxCount`), by the bind's generic path: ODK Collect ignores
     * them, the door holds an instance to them.
     */
    final Map<String, Map<String, String>> surveydRules = new HashMap<>();
    static final String SURVEYD = "https://surveyd.dev/xforms";

    /** The form whose files `jr://file…` references resolve to (one request at a time). */
    private static volatile Path current;

    private static final Pattern MOMENT = Pattern.compile("\\b(today|now|random|uuid|once)\\s*\\(");

    static void setUp() {
        PrototypeManager.registerPrototypes(FormValidator.SERIALIABLE_CLASSES);
        new XFormsModule().registerModule();
        PropertyManager.setPropertyManager(new StubPropertyManager());
        ReferenceManager.instance().addReferenceFactory(new MediaReferences());
        PrototypeManager.registerPrototype("org.opendatakit.validate.StubSetGeopointAction");
        XFormParser.registerActionHandler("setgeopoint", new StubSetGeopointActionHandler());
    }

    LoadedForm(byte[] xform, Map<String, byte[]> files) throws Exception {
        this.xform = xform;
        if (files.isEmpty()) {
            media = null;
        } else {
            media = Files.createTempDirectory("javarosa-media");
            media.toFile().deleteOnExit();
            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                Path file = media.resolve(new File(f.getKey()).getName());
                Files.write(file, f.getValue());
                file.toFile().deleteOnExit();
            }
        }
        FormDef fd = parse();
        index(fd.getChildren());
        for (GroupDef repeat : repeats.values()) {
            if (repeat.getCountReference() != null) {
                countTargets.add(generic((TreeReference) repeat.getCountReference().getReference()));
            }
        }
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setNamespaceAware(true);
        NodeList binds = factory.newDocumentBuilder().parse(new ByteArrayInputStream(xform)).getElementsByTagNameNS("*", "bind");
        for (int i = 0; i < binds.getLength(); i++) {
            Element bind = (Element) binds.item(i);
            for (String attribute : new String[]{"relevant", "required", "constraint", "calculate"}) {
                if (MOMENT.matcher(bind.getAttribute(attribute)).find()) momentBound.add(bind.getAttribute("nodeset").trim());
            }
        }
        Map<String, String> declared = new HashMap<>();
        for (int i = 0; i < binds.getLength(); i++) {
            Element bind = (Element) binds.item(i);
            for (int k = 0; k < bind.getAttributes().getLength(); k++) {
                org.w3c.dom.Node a = bind.getAttributes().item(k);
                if ("accept".equals(a.getLocalName())) declared.put(bind.getAttribute("nodeset").trim(), a.getNodeValue());
                if (SURVEYD.equals(a.getNamespaceURI()) && List.of("minCount", "maxCount").contains(a.getLocalName())) {
                    surveydRules.computeIfAbsent(bind.getAttribute("nodeset").trim(), n -> new HashMap<>()).put(a.getLocalName(), a.getNodeValue().trim());
                }
            }
        }
        NodeList uploads = factory.newDocumentBuilder().parse(new ByteArrayInputStream(xform)).getElementsByTagNameNS("*", "upload");
        for (int i = 0; i < uploads.getLength(); i++) {
            Element upload = (Element) uploads.item(i);
            String ref = upload.getAttribute("ref").trim();
            String types = declared.getOrDefault(ref, upload.getAttribute("mediatype"));
            accepts.put(ref, List.of(types.trim().isEmpty() ? new String[]{"*/*"} : types.trim().split("\\s+")));
        }
    }

    /** A fresh FormDef of this XForm. */
    FormDef parse() throws Exception {
        current = media;
        FormDef fd = XFormUtils.getFormFromInputStream(new ByteArrayInputStream(xform));
        fd.getEvaluationContext().addFunctionHandler(new StandIn("pulldata") {
            public Object eval(Object[] args, EvaluationContext ec) { return pulldata(args); }
        });
        fd.getEvaluationContext().addFunctionHandler(new StandIn("intersects") {
            public Object eval(Object[] args, EvaluationContext ec) { return Boolean.FALSE; }
        });
        return fd;
    }

    /** pulldata(name, column, key column, value) as Collect answers it, over `<name>.csv`. */
    private Object pulldata(Object[] args) {
        if (args.length != 4) throw new IllegalArgumentException("pulldata() takes 4 arguments, has " + args.length);
        String name = XPathFuncExpr.toString(args[0]);
        File file = media == null ? null : media.resolve(name + ".csv").toFile();
        if (file == null || !file.isFile()) return args[0];
        TreeElement table = tables.computeIfAbsent(name, n -> {
            try {
                return new CsvExternalInstance().parse(n, file.getPath());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        String column = XPathFuncExpr.toString(args[1]), key = XPathFuncExpr.toString(args[2]), value = XPathFuncExpr.toString(args[3]);
        for (int i = 0; i < table.getNumChildren(); i++) {
            TreeElement row = table.getChildAt(i);
            TreeElement k = row.getChild(key, 0);
            if (k == null || k.getValue() == null || !k.getValue().uncast().getString().equals(value)) continue;
            TreeElement v = row.getChild(column, 0);
            return v == null || v.getValue() == null ? "" : v.getValue().uncast().getString();
        }
        return "";
    }

    /** `jr://file-csv/x.csv` and `jr://file/x` to the current form's files; anything else to ODK Validate's stub. */
    private static final class MediaReferences implements ReferenceFactory {
        private final StubReferenceFactory stub = new StubReferenceFactory();

        public boolean derives(String uri) { return true; }

        public Reference derive(String uri) {
            Path dir = current;
            for (String prefix : new String[]{"jr://file-csv/", "jr://file/"}) {
                if (dir == null || !uri.startsWith(prefix)) continue;
                File file = dir.resolve(new File(uri.substring(prefix.length())).getName()).toFile();
                if (file.isFile()) return new FileReference(uri, file);
            }
            return stub.derive(uri);
        }

        public Reference derive(String uri, String context) { return derive(uri); }
    }

    private static final class FileReference implements Reference {
        private final String uri;
        private final File file;
        FileReference(String uri, File file) { this.uri = uri; this.file = file; }
        public boolean doesBinaryExist() { return true; }
        public InputStream getStream() throws IOException { return new FileInputStream(file); }
        public String getURI() { return uri; }
        public String getLocalURI() { return file.getAbsolutePath(); }
        public boolean isReadOnly() { return true; }
        public OutputStream getOutputStream() throws IOException { throw new IOException("read only"); }
        public void remove() throws IOException { throw new IOException("read only"); }
        public Reference[] probeAlternativeReferences() { return new Reference[0]; }
    }

    private abstract static class StandIn implements IFunctionHandler {
        private final String name;
        StandIn(String name) { this.name = name; }
        public String getName() { return name; }
        public List<Class[]> getPrototypes() { return new ArrayList<>(); }
        public boolean rawArgs() { return true; }
        public boolean realTime() { return false; }
    }

    private void index(List<IFormElement> children) {
        if (children == null) return;
        for (IFormElement child : children) {
            if (child instanceof QuestionDef) {
                questions.put(generic((TreeReference) child.getBind().getReference()), (QuestionDef) child);
            } else if (child instanceof GroupDef) {
                GroupDef group = (GroupDef) child;
                if (group.getRepeat()) repeats.put(generic((TreeReference) group.getBind().getReference()), group);
                index(group.getChildren());
            }
        }
    }

    /** Whether the logic of the node at `genericPath`, or of a group or repeat around it, depends on the moment. */
    boolean dependsOnTheMoment(String genericPath) {
        for (String path = genericPath; path.lastIndexOf('/') > 0; path = path.substring(0, path.lastIndexOf('/'))) {
            if (momentBound.contains(path)) return true;
        }
        return false;
    }

    /** `/data/group/q`: the names of an absolute reference, no indices. */
    static String generic(TreeReference ref) {
        StringBuilder path = new StringBuilder();
        for (int i = 0; i < ref.size(); i++) path.append('/').append(ref.getName(i));
        return path.toString();
    }

    /** `/data/group/people[2]/age`: as XPath names it, repeat instances numbered from 1. */
    String question(TreeReference ref) {
        StringBuilder path = new StringBuilder();
        StringBuilder generic = new StringBuilder();
        for (int i = 0; i < ref.size(); i++) {
            generic.append('/').append(ref.getName(i));
            path.append('/').append(ref.getName(i));
            if (repeats.containsKey(generic.toString()) && ref.getMultiplicity(i) >= 0) path.append('[').append(ref.getMultiplicity(i) + 1).append(']');
        }
        return path.toString();
    }

    /**
     * The path of the answer as the server names it: groups unwrap, a repeat instance is
     * `repeat[index from 0]`, joined with dots (`people[1].age`). `upTo`: how many steps of `ref`
     * to use (a repeat itself, without an index, when it ends on a repeat).
     */
    String answerPath(TreeReference ref, int upTo) {
        StringBuilder path = new StringBuilder();
        StringBuilder generic = new StringBuilder("/" + ref.getName(0));
        for (int i = 1; i < upTo; i++) {
            generic.append('/').append(ref.getName(i));
            String g = generic.toString();
            boolean last = i == upTo - 1;
            if (repeats.containsKey(g)) {
                if (path.length() > 0) path.append('.');
                path.append(ref.getName(i));
                if (!last) path.append('[').append(Math.max(0, ref.getMultiplicity(i))).append(']');
            } else if (questions.containsKey(g) || last) {
                if (path.length() > 0) path.append('.');
                path.append(ref.getName(i));
            }
        }
        return path.toString();
    }

    String answerPath(TreeReference ref) {
        return answerPath(ref, ref.size());
    }

    /** The element at `ref` below `root` (the instance's root), or null. */
    static TreeElement at(TreeElement root, TreeReference ref, int upTo) {
        TreeElement e = root;
        for (int i = 1; i < upTo && e != null; i++) e = e.getChild(ref.getName(i), Math.max(0, ref.getMultiplicity(i)));
        return e;
    }
}
