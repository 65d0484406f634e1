import org.javarosa.core.model.Constants;
import org.javarosa.core.model.FormDef;
import org.javarosa.core.model.FormIndex;
import org.javarosa.core.model.GroupDef;
import org.javarosa.core.model.ItemsetBinding;
import org.javarosa.core.model.QuestionDef;
import org.javarosa.core.model.SelectChoice;
import org.javarosa.core.model.data.DateData;
import org.javarosa.core.model.data.DecimalData;
import org.javarosa.core.model.data.IAnswerData;
import org.javarosa.core.model.data.IntegerData;
import org.javarosa.core.model.data.SelectMultiData;
import org.javarosa.core.model.data.SelectOneData;
import org.javarosa.core.model.data.StringData;
import org.javarosa.core.model.data.helper.Selection;
import org.javarosa.core.model.instance.AbstractTreeElement;
import org.javarosa.core.model.instance.DataInstance;
import org.javarosa.core.model.instance.TreeElement;
import org.javarosa.core.model.instance.TreeReference;
import org.javarosa.form.api.FormEntryController;
import org.javarosa.form.api.FormEntryModel;
import org.javarosa.form.api.FormEntryPrompt;
import org.javarosa.xform.util.XFormAnswerDataSerializer;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.OutputKeys;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;

/**
 * Deliberately broken copies of a filled instance, for the judge to classify: a constraint
 * broken, a required answer emptied, a choice the question does not offer (or its filter leaves
 * out), an integer beyond 32 bits or written as a decimal (12.5, 12.0, 1.2E1), a jr:count
 * lowered below the instances filled (ODK Collect keeps them), a counted repeat missing its last
 * instance, an answer in a question that is not relevant. Each gets its own instanceID; at most one of each kind, on a
 * question picked by the seeded generator.
 */
final class Breaker {
    private final LoadedForm form;
    private final FormDef fd;
    private final byte[] xml;
    /** The files the filled instance names: each copy is sent with them. */
    private final List<String> files;
    private final Random random;
    private final String prefix;
    private final XFormAnswerDataSerializer serializer = new XFormAnswerDataSerializer();

    /** A relevant question as the filled form has it. */
    private static final class Asked {
        TreeReference ref;
        String generic;
        int dataType;
        int control;
        boolean required;
        boolean readOnly;
        boolean constrained;
        IAnswerData value;
        List<SelectChoice> offered;
        QuestionDef question;
    }

    Breaker(LoadedForm form, FormDef fd, byte[] xml, List<String> files, Random random, String prefix) {
        this.form = form;
        this.files = files;
        this.fd = fd;
        this.xml = xml;
        this.random = random;
        this.prefix = prefix;
    }

    List<FilledInstance> variants() throws Exception {
        List<Asked> asked = survey();
        List<FilledInstance> out = new ArrayList<>();
        List<Asked> writable = new ArrayList<>();
        for (Asked a : asked) if (!a.readOnly && !form.dependsOnTheMoment(a.generic)) writable.add(a);

        // A constraint broken.
        for (Asked a : shuffled(writable)) {
            if (!a.constrained) continue;
            IAnswerData breaking = null;
            for (IAnswerData c : breakers(a)) {
                if (!fd.evaluateConstraint(a.ref, c)) { breaking = c; break; }
            }
            if (breaking == null) continue;
            String text = text(breaking);
            out.add(variant("constraint broken: " + form.question(a.ref) + " = " + text, doc -> setText(doc, a.ref, text)));
            break;
        }
        // A required question left empty.
        for (Asked a : shuffled(writable)) {
            if (!a.required || a.value == null) continue;
            out.add(variant("required left empty: " + form.question(a.ref), doc -> setText(doc, a.ref, "")));
            break;
        }
        // A choice the question does not have.
        for (Asked a : shuffled(writable)) {
            if (a.control != Constants.CONTROL_SELECT_ONE && a.control != Constants.CONTROL_SELECT_MULTI) continue;
            String text = a.control == Constants.CONTROL_SELECT_MULTI && a.value != null ? text(a.value) + " not_offered" : "not_offered";
            out.add(variant("choice not offered: " + form.question(a.ref) + " = " + text, doc -> setText(doc, a.ref, text)));
            break;
        }
        // A choice of the list that the question's choice filter leaves out here.
        for (Asked a : shuffled(writable)) {
            if (a.control != Constants.CONTROL_SELECT_ONE) continue;
            ItemsetBinding itemset = a.question.getDynamicChoices();
            if (itemset == null || itemset.nodesetRef == null || !itemset.nodesetRef.hasPredicates()) continue;
            Set<String> offered = new LinkedHashSet<>();
            for (SelectChoice c : a.offered) offered.add(c.getValue());
            List<String> outside = new ArrayList<>(allChoices(a.question));
            outside.removeAll(offered);
            if (outside.isEmpty()) continue;
            String text = outside.get(random.nextInt(outside.size()));
            out.add(variant("choice outside its filter: " + form.question(a.ref) + " = " + text, doc -> setText(doc, a.ref, text)));
            break;
        }
        // Integers JavaRosa cannot hold (32 bits) or read (a fraction).
        List<Asked> integers = new ArrayList<>();
        for (Asked a : writable) if (a.dataType == Constants.DATATYPE_INTEGER && a.control == Constants.CONTROL_INPUT) integers.add(a);
        if (!integers.isEmpty()) {
            Asked a = integers.get(random.nextInt(integers.size()));
            String text = random.nextBoolean() ? "2147483648" : "-2147483649";
            out.add(variant("integer beyond 32 bits: " + form.question(a.ref) + " = " + text, doc -> setText(doc, a.ref, text)));
            Asked b = integers.get(random.nextInt(integers.size()));
            String decimal = new String[]{"12.5", "12.0", "1.2E1"}[random.nextInt(3)];
            out.add(variant("integer written as a decimal: " + form.question(b.ref) + " = " + decimal, doc -> setText(doc, b.ref, decimal)));
        }
        // Counted repeats: the count lowered below the instances filled, or an instance missing.
        List<TreeElement[]> counted = new ArrayList<>();
        countedRepeats(fd.getMainInstance().getRoot(), counted);
        for (TreeElement[] c : shuffled(counted)) {
            TreeElement parent = c[0], source = c[1];
            String name = c[2].getName();
            int n = parent.getChildMultiplicity(name);
            Asked count = null;
            for (Asked a : writable) if (a.ref.equals(source.getRef())) count = a;
            if (count == null || n < 1) continue;
            TreeReference countRef = count.ref;
            out.add(variant("repeat above a lowered count: " + form.question(countRef) + " = " + (n - 1) + " with " + n + " instances of " + name,
                    doc -> setText(doc, countRef, String.valueOf(n - 1))));
            break;
        }
        for (TreeElement[] c : shuffled(counted)) {
            TreeElement parent = c[0];
            String name = c[2].getName();
            int n = parent.getChildMultiplicity(name);
            if (n < 1) continue;
            TreeReference last = parent.getChild(name, n - 1).getRef();
            out.add(variant("repeat below its count: " + form.question(last) + " left out", doc -> {
                Element e = find(doc, last);
                if (e != null) e.getParentNode().removeChild(e);
            }));
            break;
        }
        // An answer in a question that is not relevant (Collect's serializer leaves such a node out).
        List<TreeElement> hidden = new ArrayList<>();
        hiddenQuestions(fd.getMainInstance().getRoot(), hidden);
        if (!hidden.isEmpty()) {
            TreeElement h = hidden.get(random.nextInt(hidden.size()));
            String text = sample(h);
            if (text != null) {
                TreeReference ref = h.getRef();
                out.add(variant("answer in a question that is not relevant: " + form.question(ref) + " = " + text, doc -> insert(doc, ref, text)));
            }
        }
        return out;
    }

    /** Every relevant question of the filled form, walked as Collect walks it. */
    private List<Asked> survey() {
        List<Asked> out = new ArrayList<>();
        FormEntryModel model = new FormEntryModel(fd);
        FormEntryController controller = new FormEntryController(model);
        controller.jumpToIndex(FormIndex.createBeginningOfFormIndex());
        for (int event = controller.stepToNextEvent(); event != FormEntryController.EVENT_END_OF_FORM; event = controller.stepToNextEvent()) {
            if (event != FormEntryController.EVENT_QUESTION) continue;
            FormEntryPrompt prompt = model.getQuestionPrompt();
            Asked a = new Asked();
            a.ref = model.getFormIndex().getReference();
            a.generic = LoadedForm.generic(a.ref);
            a.dataType = prompt.getDataType();
            a.control = prompt.getControlType();
            a.required = prompt.isRequired();
            a.readOnly = prompt.isReadOnly();
            TreeElement element = fd.getMainInstance().resolveReference(a.ref);
            a.constrained = element != null && element.getConstraint() != null;
            a.value = element == null ? null : element.getValue();
            a.offered = prompt.getSelectChoices() == null ? List.of() : prompt.getSelectChoices();
            a.question = prompt.getQuestion();
            if (a.control == Constants.CONTROL_UPLOAD || a.control == Constants.CONTROL_IMAGE_CHOOSE || a.control == Constants.CONTROL_AUDIO_CAPTURE
                    || a.control == Constants.CONTROL_VIDEO_CAPTURE || a.control == Constants.CONTROL_FILE_CAPTURE || a.control == Constants.CONTROL_RANK
                    || a.control == Constants.CONTROL_TRIGGER) continue;
            out.add(a);
        }
        return out;
    }

    /** Values of the question's type likely to break a constraint. */
    private List<IAnswerData> breakers(Asked a) {
        List<IAnswerData> out = new ArrayList<>();
        if (a.control == Constants.CONTROL_SELECT_ONE) {
            for (SelectChoice c : a.offered) out.add(new SelectOneData(new Selection(c)));
            return out;
        }
        if (a.control == Constants.CONTROL_SELECT_MULTI) {
            for (SelectChoice x : a.offered) {
                for (SelectChoice y : a.offered) {
                    if (x.getIndex() < y.getIndex()) out.add(new SelectMultiData(new ArrayList<>(List.of(new Selection(x), new Selection(y)))));
                }
            }
            return out;
        }
        switch (a.dataType) {
            case Constants.DATATYPE_INTEGER:
                for (int n : new int[]{-1, 0, 1000001, 121, 51, 31, 13, 201, 2147483647, -2147483648, 1}) out.add(new IntegerData(n));
                break;
            case Constants.DATATYPE_DECIMAL:
                for (double d : new double[]{-1.0, 0.0, 1.0E9, 1.5E7, 61.0, 9.0, 1.0, 1001.0, 5.0E-4}) out.add(new DecimalData(d));
                break;
            case Constants.DATATYPE_DATE:
                for (LocalDate d : new LocalDate[]{LocalDate.of(1999, 12, 31), LocalDate.of(2023, 6, 1), LocalDate.of(2099, 1, 1)}) {
                    out.add(new DateData(Date.from(d.atStartOfDay(ZoneId.systemDefault()).toInstant())));
                }
                break;
            case Constants.DATATYPE_TEXT:
                for (String s : new String[]{"A", "abc", "1", "x y"}) out.add(new StringData(s));
                break;
            default:
                break;
        }
        return out;
    }

    /** The names of every choice of a select's list, filtered or not. */
    private List<String> allChoices(QuestionDef q) {
        List<String> out = new ArrayList<>();
        ItemsetBinding itemset = q.getDynamicChoices();
        if (itemset == null) {
            for (SelectChoice c : q.getChoices()) out.add(c.getValue());
            return out;
        }
        DataInstance<?> list = fd.getNonMainInstance(itemset.nodesetRef.getInstanceName());
        if (list == null || itemset.valueRef == null) return out;
        String valueName = itemset.valueRef.getName(itemset.valueRef.size() - 1);
        AbstractTreeElement<?> root = list.getRoot();
        for (int i = 0; i < root.getNumChildren(); i++) {
            AbstractTreeElement<?> item = root.getChildAt(i);
            AbstractTreeElement<?> value = item.getChild(valueName, 0);
            if (value != null && value.getValue() != null) out.add(value.getValue().uncast().getString());
        }
        return out;
    }

    /** (parent, count's node, a repeat instance) for each counted repeat with instances in a relevant parent. */
    private void countedRepeats(TreeElement element, List<TreeElement[]> out) {
        String generic = LoadedForm.generic(element.getRef());
        for (GroupDef repeat : form.repeats.values()) {
            TreeReference ref = (TreeReference) repeat.getBind().getReference();
            if (repeat.getCountReference() == null || !LoadedForm.generic(ref.getParentRef()).equals(generic)) continue;
            String name = ref.getName(ref.size() - 1);
            if (!element.isRelevant() || element.getChildMultiplicity(name) == 0) continue;
            TreeReference countRef = ((TreeReference) repeat.getCountReference().getReference()).contextualize(element.getRef());
            TreeElement source = countRef == null ? null : fd.getMainInstance().resolveReference(countRef);
            if (source != null) out.add(new TreeElement[]{element, source, element.getChild(name, 0)});
        }
        for (int i = 0; i < element.getNumChildren(); i++) {
            TreeElement child = element.getChildAt(i);
            if (child.getMult() != TreeReference.INDEX_TEMPLATE && child.getNumChildren() > 0) countedRepeats(child, out);
        }
    }

    /** Questions that are not relevant in a relevant group (so their node is left out of the instance). */
    private void hiddenQuestions(TreeElement element, List<TreeElement> out) {
        for (int i = 0; i < element.getNumChildren(); i++) {
            TreeElement child = element.getChildAt(i);
            if (child.getMult() == TreeReference.INDEX_TEMPLATE) continue;
            String generic = LoadedForm.generic(child.getRef());
            if (form.questions.containsKey(generic) && !child.isRelevant() && element.isRelevant() && !form.dependsOnTheMoment(generic)) out.add(child);
            if (child.getNumChildren() > 0 && child.isRelevant()) hiddenQuestions(child, out);
        }
    }

    /** A value of the question's type, as the instance would carry it. */
    private String sample(TreeElement e) {
        QuestionDef q = form.questions.get(LoadedForm.generic(e.getRef()));
        if (q == null) return null;
        switch (q.getControlType()) {
            case Constants.CONTROL_SELECT_ONE:
            case Constants.CONTROL_SELECT_MULTI: {
                List<String> all = allChoices(q);
                return all.isEmpty() ? null : all.get(0);
            }
            case Constants.CONTROL_INPUT:
            case Constants.CONTROL_TEXTAREA:
                break;
            default:
                return null;
        }
        switch (e.getDataType()) {
            case Constants.DATATYPE_INTEGER: return "7";
            case Constants.DATATYPE_DECIMAL: return "2.5";
            case Constants.DATATYPE_DATE: return "2025-01-15";
            case Constants.DATATYPE_GEOPOINT: return "1.5 2.5 0.0 0.0";
            case Constants.DATATYPE_TEXT: return "x";
            default: return null;
        }
    }

    private String text(IAnswerData data) {
        return String.valueOf(serializer.serializeAnswerData(data));
    }

    private <T> List<T> shuffled(List<T> list) {
        List<T> copy = new ArrayList<>(list);
        java.util.Collections.shuffle(copy, random);
        return copy;
    }

    private FilledInstance variant(String label, Consumer<Document> change) throws Exception {
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setNamespaceAware(true);
        Document doc = factory.newDocumentBuilder().parse(new ByteArrayInputStream(xml));
        change.accept(doc);
        Element root = doc.getDocumentElement();
        for (Element meta : children(root, "meta")) {
            for (Element id : children(meta, "instanceID")) id.setTextContent(Filler.uuid(random));
        }
        Transformer t = TransformerFactory.newInstance().newTransformer();
        t.setOutputProperty(OutputKeys.ENCODING, "UTF-8");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        t.transform(new DOMSource(doc), new StreamResult(bytes));
        return new FilledInstance(prefix + ": " + label, bytes.toByteArray(), files);
    }

    private static String local(Node n) {
        return n.getLocalName() != null ? n.getLocalName() : n.getNodeName();
    }

    private static List<Element> children(Element e, String name) {
        List<Element> out = new ArrayList<>();
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element && local(n).equals(name)) out.add((Element) n);
        }
        return out;
    }

    /** The element at `ref` (its repeat instances counted among the elements of their name). */
    private static Element find(Document doc, TreeReference ref) {
        Element e = doc.getDocumentElement();
        for (int i = 1; i < ref.size() && e != null; i++) {
            List<Element> named = children(e, ref.getName(i));
            int mult = Math.max(0, ref.getMultiplicity(i));
            e = mult < named.size() ? named.get(mult) : null;
        }
        return e;
    }

    private static void setText(Document doc, TreeReference ref, String text) {
        Element e = find(doc, ref);
        if (e == null) throw new IllegalStateException("no element " + ref);
        while (e.getFirstChild() != null) e.removeChild(e.getFirstChild());
        if (!text.isEmpty()) e.setTextContent(text);
    }

    /** A new element at `ref` with `text`, placed where the form's template has it among its siblings. */
    private void insert(Document doc, TreeReference ref, String text) {
        Element parent = find(doc, ref.getParentRef());
        if (parent == null) throw new IllegalStateException("no element " + ref.getParentRef());
        String name = ref.getName(ref.size() - 1);
        for (Element existing : children(parent, name)) parent.removeChild(existing);
        Element e = doc.createElementNS(parent.getNamespaceURI(), name);
        e.setTextContent(text);
        // The next sibling in the form's order that the instance has.
        TreeElement templateParent = fd.getMainInstance().resolveReference(ref.getParentRef());
        Node before = null;
        boolean after = false;
        for (int i = 0; templateParent != null && i < templateParent.getNumChildren() && before == null; i++) {
            String sibling = templateParent.getChildAt(i).getName();
            if (sibling.equals(name)) { after = true; continue; }
            if (after) {
                List<Element> found = children(parent, sibling);
                if (!found.isEmpty()) before = found.get(0);
            }
        }
        parent.insertBefore(e, before);
    }
}
