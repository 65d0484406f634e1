import org.javarosa.core.model.FormDef;
import org.javarosa.core.model.GroupDef;
import org.javarosa.core.model.IFormElement;
import org.javarosa.core.model.QuestionDef;
import org.javarosa.core.model.condition.EvaluationContext;
import org.javarosa.core.model.condition.IFunctionHandler;
import org.javarosa.core.model.instance.TreeElement;
import org.javarosa.core.model.instance.TreeReference;
import org.javarosa.core.reference.ReferenceManager;
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
 * factory, setgeopoint stub, and stand-ins for pulldata() and intersects()), with what the filler
 * and the judge need to know of its structure: its questions and repeats by path, the questions
 * that give a repeat its count, and the questions whose logic depends on the moment
 * (today(), now(), random(), uuid(), once()).
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

    private static final Pattern MOMENT = Pattern.compile("\\b(today|now|random|uuid|once)\\s*\\(");

    static void setUp() {
        PrototypeManager.registerPrototypes(FormValidator.SERIALIABLE_CLASSES);
        new XFormsModule().registerModule();
        PropertyManager.setPropertyManager(new StubPropertyManager());
        ReferenceManager.instance().addReferenceFactory(new StubReferenceFactory());
        PrototypeManager.registerPrototype("org.opendatakit.validate.StubSetGeopointAction");
        XFormParser.registerActionHandler("setgeopoint", new StubSetGeopointActionHandler());
    }

    LoadedForm(byte[] xform) throws Exception {
        this.xform = xform;
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
    }

    /** A fresh FormDef of this XForm. */
    FormDef parse() throws Exception {
        FormDef fd = XFormUtils.getFormFromInputStream(new ByteArrayInputStream(xform));
        fd.getEvaluationContext().addFunctionHandler(new StandIn("pulldata") {
            public Object eval(Object[] args, EvaluationContext ec) { return args[0]; }
        });
        fd.getEvaluationContext().addFunctionHandler(new StandIn("intersects") {
            public Object eval(Object[] args, EvaluationContext ec) { return Boolean.FALSE; }
        });
        return fd;
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
