import org.javarosa.core.model.Constants;
import org.javarosa.core.model.FormDef;
import org.javarosa.core.model.FormIndex;
import org.javarosa.core.model.GroupDef;
import org.javarosa.core.model.SelectChoice;
import org.javarosa.core.model.data.IAnswerData;
import org.javarosa.core.model.instance.FormInstance;
import org.javarosa.core.model.instance.InstanceInitializationFactory;
import org.javarosa.core.model.instance.TreeElement;
import org.javarosa.core.model.instance.TreeReference;
import org.javarosa.form.api.FormEntryController;
import org.javarosa.form.api.FormEntryModel;
import org.javarosa.form.api.FormEntryPrompt;
import org.javarosa.xform.parse.XFormParser;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Judges a filled-in instance as ODK Collect does when it reopens a saved form and finalizes it:
 * the instance restored into the form (`XFormParser.restoreDataModel`, `TreeElement.populate`,
 * `setRoot`, `FormDef.initialize(false, …)`), then each question stepped through with
 * FormEntryController and answered with its own value, constraints and required checked
 * (`answerQuestion(index, value, true)`, what `FormDef.validate` does).
 *
 * What that walk cannot see is checked by hand, each as Collect would never send it: a value the
 * engine drops on loading because it is not of the question's type (an integer beyond 32 bits or
 * written as a decimal); a choice the question does not offer there (read before the prompt
 * strips it: its list, after its choice filter); an answer in a question that is not relevant
 * (Collect's serializer leaves those out); a counted repeat with fewer instances than its count
 * (Collect makes the missing ones). More instances than the count are kept, as Collect keeps them.
 *
 * A JSON definition's question bounds (`minimum`, `maximum`, `maxLength`) are part of the
 * constraint of the XForm surveyd writes, so JavaRosa checks them itself. A repeat's `minCount`
 * and `maxCount` are only in surveyd's namespace (`surveyd:minCount`, `surveyd:maxCount`), which
 * ODK Collect ignores: they are checked here, each failure's reason starting `surveyd:`, so that
 * the test expects the door's refusal and counts such instances apart.
 *
 * Every failure is listed, in the instance's order: the question (`/data/people[2]/age`), the
 * answer's path as the server names it (`people[1].age`), why, and the value sent.
 */
final class Judge {
    private final LoadedForm form;
    private final List<Map<String, Object>> failures = new ArrayList<>();
    private final Set<String> failed = new HashSet<>();
    private final Map<String, Integer> order = new HashMap<>();

    Judge(LoadedForm form) {
        this.form = form;
    }

    List<Map<String, Object>> judge(byte[] xml) throws Exception {
        FormDef fd = form.parse();
        FormInstance saved = XFormParser.restoreDataModel(xml, null);
        TreeElement sent = saved.getRoot();
        TreeElement root = fd.getMainInstance().getRoot().deepCopy(true);
        if (!root.getName().equals(sent.getName())) {
            throw new IllegalArgumentException("the instance's root is " + sent.getName() + ", the form's " + root.getName());
        }
        root.populate(sent, fd);
        fd.getMainInstance().setRoot(root);
        fd.initialize(false, new InstanceInitializationFactory());
        TreeElement loaded = fd.getMainInstance().getRoot();
        number(sent, loaded.getRef());

        byHand(sent, loaded, "/" + sent.getName());
        counts(fd, sent, loaded);

        FormEntryModel model = new FormEntryModel(fd);
        FormEntryController controller = new FormEntryController(model);
        controller.jumpToIndex(FormIndex.createBeginningOfFormIndex());
        int steps = 0;
        for (int event = controller.stepToNextEvent(); event != FormEntryController.EVENT_END_OF_FORM; event = controller.stepToNextEvent()) {
            if (++steps > 50_000) throw new IllegalStateException("the form does not end");
            if (event != FormEntryController.EVENT_QUESTION) continue;
            FormIndex index = model.getFormIndex();
            TreeReference ref = index.getReference();
            if (failed.contains(key(ref)) || !sentInstances(sent, ref)) continue;
            FormEntryPrompt prompt = model.getQuestionPrompt();
            TreeElement element = LoadedForm.at(sent, ref, ref.size());
            String raw = raw(element);
            int control = prompt.getControlType();
            if ((control == Constants.CONTROL_SELECT_ONE || control == Constants.CONTROL_SELECT_MULTI) && !raw.isBlank()) {
                Set<String> offered = new HashSet<>();
                for (SelectChoice c : prompt.getSelectChoices() == null ? List.<SelectChoice>of() : prompt.getSelectChoices()) offered.add(c.getValue());
                String[] names = control == Constants.CONTROL_SELECT_ONE ? new String[]{raw.trim()} : raw.trim().split("\\s+");
                boolean all = true;
                for (String name : names) all &= offered.contains(name);
                if (!all) {
                    fail(ref, ref.size(), "not one of the choices offered here", raw);
                    continue;
                }
            }
            IAnswerData value = prompt.getAnswerValue();
            int outcome = controller.answerQuestion(index, value, true);
            if (outcome == FormEntryController.ANSWER_REQUIRED_BUT_EMPTY) {
                fail(ref, ref.size(), "required", raw);
            } else if (outcome == FormEntryController.ANSWER_CONSTRAINT_VIOLATED) {
                String message = prompt.getConstraintText();
                fail(ref, ref.size(), "constraint" + (message == null ? "" : " (" + message + ")"), raw);
            }
        }
        failures.sort(Comparator.comparingInt(f -> (Integer) f.get("order")));
        for (Map<String, Object> f : failures) f.remove("order");
        return failures;
    }

    /** Answers the engine dropped on loading (not of their type) or that sit in questions not relevant. */
    private void byHand(TreeElement sent, TreeElement loaded, String generic) {
        for (int i = 0; i < sent.getNumChildren(); i++) {
            TreeElement s = sent.getChildAt(i);
            String g = generic + "/" + s.getName();
            TreeElement l = loaded == null ? null : loaded.getChild(s.getName(), s.getMult());
            if (s.getNumChildren() > 0) {
                byHand(s, l, g);
                continue;
            }
            String raw = raw(s);
            if (raw.isEmpty() || l == null || !form.questions.containsKey(g)) continue;
            TreeReference ref = l.getRef();
            if (!l.isRelevant()) {
                if (!form.dependsOnTheMoment(g)) fail(ref, ref.size(), "not relevant", raw);
            } else if (l.getValue() == null) {
                fail(ref, ref.size(), "not a value of its type (JavaRosa drops it on loading)", raw);
            }
        }
    }

    /**
     * Repeats in relevant places with fewer instances than their count (jr:count), or than their
     * surveyd:minCount, or more than their surveyd:maxCount.
     */
    private void counts(FormDef fd, TreeElement sent, TreeElement loaded) {
        String generic = LoadedForm.generic(loaded.getRef());
        for (GroupDef repeat : form.repeats.values()) {
            TreeReference ref = (TreeReference) repeat.getBind().getReference();
            Map<String, String> rules = form.surveydRules.getOrDefault(LoadedForm.generic(ref), Map.of());
            boolean bounded = rules.containsKey("minCount") || rules.containsKey("maxCount");
            if ((repeat.getCountReference() == null && !bounded) || !LoadedForm.generic(ref.getParentRef()).equals(generic) || !loaded.isRelevant()) continue;
            String name = ref.getName(ref.size() - 1);
            TreeReference first = loaded.getRef().extendRef(name, 0);
            if (!fd.isRepeatRelevant(first)) continue;
            int sentInstances = sent == null ? 0 : sent.getChildMultiplicity(name);
            if (rules.containsKey("minCount") && sentInstances < Double.parseDouble(rules.get("minCount"))) {
                fail(first, first.size(), "surveyd:minCount " + rules.get("minCount") + " (a rule Collect does not see)", String.valueOf(sentInstances));
            }
            if (rules.containsKey("maxCount") && sentInstances > Double.parseDouble(rules.get("maxCount"))) {
                fail(first, first.size(), "surveyd:maxCount " + rules.get("maxCount") + " (a rule Collect does not see)", String.valueOf(sentInstances));
            }
            if (repeat.getCountReference() == null) continue;
            TreeReference countRef = ((TreeReference) repeat.getCountReference().getReference()).contextualize(loaded.getRef());
            TreeElement source = countRef == null ? null : fd.getMainInstance().resolveReference(countRef);
            int count = 0;
            try {
                count = (int) Double.parseDouble(raw(source).trim());
            } catch (NumberFormatException e) {
                count = 0;
            }
            int present = sent == null ? 0 : sent.getChildMultiplicity(name);
            if (present < count) {
                fail(first, first.size(), "fewer instances (" + present + ") than its count (" + count + ")", String.valueOf(present));
            }
        }
        for (int i = 0; i < loaded.getNumChildren(); i++) {
            TreeElement l = loaded.getChildAt(i);
            if (l.getMult() == TreeReference.INDEX_TEMPLATE || l.getNumChildren() == 0) continue;
            counts(fd, sent == null ? null : sent.getChild(l.getName(), l.getMult()), l);
        }
    }

    /** Whether every repeat instance on the way to `ref` was sent (the walk makes missing counted ones). */
    private boolean sentInstances(TreeElement sent, TreeReference ref) {
        TreeElement e = sent;
        StringBuilder generic = new StringBuilder("/" + ref.getName(0));
        for (int i = 1; i < ref.size(); i++) {
            generic.append('/').append(ref.getName(i));
            TreeElement next = e.getChild(ref.getName(i), Math.max(0, ref.getMultiplicity(i)));
            if (next == null) return !form.repeats.containsKey(generic.toString()) && !hasRepeatBelow(ref, i);
            e = next;
        }
        return true;
    }

    private boolean hasRepeatBelow(TreeReference ref, int from) {
        StringBuilder generic = new StringBuilder();
        for (int i = 0; i < ref.size(); i++) {
            generic.append('/').append(ref.getName(i));
            if (i >= from && form.repeats.containsKey(generic.toString())) return true;
        }
        return false;
    }

    /** The instance's elements numbered in document order (a failure's place in the list). */
    private void number(TreeElement sent, TreeReference ref) {
        order.put(key(ref), order.size());
        for (int i = 0; i < sent.getNumChildren(); i++) {
            TreeElement s = sent.getChildAt(i);
            number(s, ref.extendRef(s.getName(), s.getMult()));
        }
    }

    private void fail(TreeReference ref, int upTo, String why, String value) {
        String key = key(ref);
        if (!failed.add(key)) return;
        Map<String, Object> f = new LinkedHashMap<>();
        boolean repeat = form.repeats.containsKey(LoadedForm.generic(ref));
        f.put("question", repeat ? form.question(ref.getParentRef()) + "/" + ref.getName(ref.size() - 1) : form.question(ref));
        f.put("path", form.answerPath(ref, upTo));
        f.put("reason", why);
        f.put("value", value);
        Integer at = order.get(key);
        if (at == null && ref.getParentRef() != null) at = order.get(key(ref.getParentRef()));
        f.put("order", at == null ? Integer.MAX_VALUE : at);
        failures.add(f);
    }

    /** `/data[0]/household[0]/people[1]/age[0]`: one spelling whatever the reference's unbound steps. */
    private static String key(TreeReference ref) {
        StringBuilder k = new StringBuilder();
        for (int i = 0; i < ref.size(); i++) k.append('/').append(ref.getName(i)).append('[').append(Math.max(0, ref.getMultiplicity(i))).append(']');
        return k.toString();
    }

    private static String raw(TreeElement e) {
        if (e == null) return "";
        IAnswerData v = e.getValue();
        return v == null ? "" : v.uncast().getString();
    }
}
