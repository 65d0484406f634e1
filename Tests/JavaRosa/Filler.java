import org.javarosa.core.model.Constants;
import org.javarosa.core.model.FormDef;
import org.javarosa.core.model.FormIndex;
import org.javarosa.core.model.RangeQuestion;
import org.javarosa.core.model.SelectChoice;
import org.javarosa.core.model.data.DateData;
import org.javarosa.core.model.data.DateTimeData;
import org.javarosa.core.model.data.DecimalData;
import org.javarosa.core.model.data.GeoPointData;
import org.javarosa.core.model.data.GeoShapeData;
import org.javarosa.core.model.data.GeoTraceData;
import org.javarosa.core.model.data.IAnswerData;
import org.javarosa.core.model.data.IntegerData;
import org.javarosa.core.model.data.LongData;
import org.javarosa.core.model.data.SelectMultiData;
import org.javarosa.core.model.data.SelectOneData;
import org.javarosa.core.model.data.StringData;
import org.javarosa.core.model.data.TimeData;
import org.javarosa.core.model.data.UncastData;
import org.javarosa.core.model.data.helper.Selection;
import org.javarosa.core.model.instance.InstanceInitializationFactory;
import org.javarosa.core.model.instance.TreeElement;
import org.javarosa.core.services.transport.payload.ByteArrayPayload;
import org.javarosa.form.api.FormEntryController;
import org.javarosa.form.api.FormEntryModel;
import org.javarosa.form.api.FormEntryPrompt;
import org.javarosa.model.xform.XFormSerializingVisitor;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.List;
import java.util.Random;
import java.util.UUID;

/**
 * Fills a form as a collector does in ODK Collect: steps through it with FormEntryController,
 * answers each relevant, writable question with a value of its type from a seeded generator
 * (a value its constraint refuses is replaced, as the collector would), adds repeat instances
 * when asked (a jr:count repeat gets its count), finalizes, and serializes the instance with
 * JavaRosa's own serializer — so decimals, geopoints, dates and times are written exactly as
 * Collect writes them (`1.5E7`, `5.0E-4`, `08:30:00.000-05:00`).
 */
final class Filler {
    private final LoadedForm form;
    private final Random random;
    /** The names given to files, as Collect names a photo it takes (the moment in milliseconds). */
    private final List<String> named = new ArrayList<>();

    Filler(LoadedForm form, long seed) {
        this.form = form;
        this.random = new Random(mix(seed));
    }

    /** Seeds next to each other made far apart (java.util.Random's first numbers follow its seed closely). */
    private static long mix(long seed) {
        long z = seed * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** A filled instance, then deliberately broken copies of it (`Breaker`). */
    List<FilledInstance> fillWithVariants(int number) throws Exception {
        FormDef fd = form.parse();
        fd.initialize(true, new InstanceInitializationFactory());
        FormEntryModel model = new FormEntryModel(fd);
        FormEntryController controller = new FormEntryController(model);
        controller.jumpToIndex(FormIndex.createBeginningOfFormIndex());
        int steps = 0;
        for (int event = controller.stepToNextEvent(); event != FormEntryController.EVENT_END_OF_FORM; event = controller.stepToNextEvent()) {
            if (++steps > 20_000) throw new IllegalStateException("the form does not end");
            if (event == FormEntryController.EVENT_PROMPT_NEW_REPEAT) {
                int existing = model.getFormIndex().getReference().getMultLast();
                if (existing < 3 && random.nextInt(100) < (existing == 0 ? 75 : 40)) controller.newRepeat();
                continue;
            }
            if (event != FormEntryController.EVENT_QUESTION) continue;
            answer(controller, model.getFormIndex(), model.getQuestionPrompt());
        }
        fd.postProcessInstance();
        setInstanceID(fd, uuid(random));
        byte[] xml = serialize(fd);
        // The files the instance names (an answer the form dropped as not relevant names none).
        String text = new String(xml, java.nio.charset.StandardCharsets.UTF_8);
        List<String> files = new ArrayList<>();
        for (String name : named) if (text.contains(">" + name + "<")) files.add(name);
        List<FilledInstance> out = new ArrayList<>();
        out.add(new FilledInstance("filled #" + number, xml, files));
        out.addAll(new Breaker(form, fd, xml, files, random, "#" + number).variants());
        return out;
    }

    private void answer(FormEntryController controller, FormIndex index, FormEntryPrompt prompt) {
        if (prompt.isReadOnly()) return;
        boolean count = form.countTargets.contains(LoadedForm.generic(index.getReference()));
        if (!prompt.isRequired() && !count && random.nextInt(100) < 12) return;
        for (IAnswerData candidate : candidates(prompt, count)) {
            if (controller.answerQuestion(index, candidate, true) == FormEntryController.ANSWER_OK) return;
        }
    }

    static final int[] INTEGER_STRESS = {2147483647, -2147483648, 2147483646, 123456789, 1000000, 0, -1};
    static final double[] DECIMAL_STRESS = {1.5E7, 123456789.0, 5.0E-4, 1.0E-5, 9.99E-4, 12345.678, 1.0E10, 6.02E23, 2.5, -0.25, -0.0, 3.0};
    static final String[] TEXT_STRESS = {"Zoë & <Ñandú> \"quoted\" 'x'", "  spaced  out  ", "ひらがな 🌍", "0712345678", "a\nb"};
    static final String[] TEXT_PLAIN = {"Amaru", "Killa", "Ana Lucía", "Leo", "TZ-MOR-00417", "Maize and beans", "Fisher"};

    /** Values of the question's type to try in turn, the first its constraint accepts kept. */
    List<IAnswerData> candidates(FormEntryPrompt prompt, boolean count) {
        List<IAnswerData> out = new ArrayList<>();
        switch (prompt.getControlType()) {
            case Constants.CONTROL_SELECT_ONE: {
                List<SelectChoice> choices = new ArrayList<>(prompt.getSelectChoices() == null ? List.of() : prompt.getSelectChoices());
                Collections.shuffle(choices, random);
                for (SelectChoice c : choices) out.add(new SelectOneData(new Selection(c)));
                return out;
            }
            case Constants.CONTROL_SELECT_MULTI: {
                List<SelectChoice> choices = prompt.getSelectChoices() == null ? List.of() : prompt.getSelectChoices();
                if (choices.isEmpty()) return out;
                for (int k = 0; k < 12; k++) {
                    List<SelectChoice> shuffled = new ArrayList<>(choices);
                    Collections.shuffle(shuffled, random);
                    List<Selection> picked = new ArrayList<>();
                    int n = 1 + random.nextInt(Math.min(3, shuffled.size()));
                    for (SelectChoice c : shuffled.subList(0, n)) picked.add(new Selection(c));
                    out.add(new SelectMultiData(picked));
                }
                for (SelectChoice c : choices) out.add(new SelectMultiData(new ArrayList<>(List.of(new Selection(c)))));
                return out;
            }
            case Constants.CONTROL_TRIGGER:
                // acknowledge: Collect writes OK.
                out.add(new StringData("OK"));
                return out;
            case Constants.CONTROL_RANGE:
                // Collect's slider gives a value between the bounds, on a step.
                if (prompt.getQuestion() instanceof RangeQuestion) {
                    RangeQuestion r = (RangeQuestion) prompt.getQuestion();
                    BigDecimal lo = r.getRangeStart().min(r.getRangeEnd()), hi = r.getRangeStart().max(r.getRangeEnd());
                    BigDecimal step = r.getRangeStep().abs();
                    int steps = step.signum() == 0 ? 0 : hi.subtract(lo).divide(step, 0, RoundingMode.DOWN).intValue();
                    for (int k = 0; k < 3; k++) {
                        BigDecimal v = lo.add(step.multiply(BigDecimal.valueOf(random.nextInt(steps + 1))));
                        out.add(prompt.getDataType() == Constants.DATATYPE_INTEGER ? new IntegerData(v.intValue()) : new DecimalData(v.doubleValue()));
                    }
                    return out;
                }
                break;
            case Constants.CONTROL_IMAGE_CHOOSE:
            case Constants.CONTROL_UPLOAD:
            case Constants.CONTROL_FILE_CAPTURE: {
                // A file of a type the question accepts, named by the moment as Collect names it;
                // the test sends it as a part beside the instance.
                List<String> accepted = form.accepts.getOrDefault(LoadedForm.generic(prompt.getIndex().getReference()), List.of("*/*"));
                String type = accepted.get(random.nextInt(accepted.size()));
                String extension = type.equals("image/png") ? ".png" : type.startsWith("image/") || type.equals("*/*") ? ".jpg" : null;
                if (extension == null) return out;
                String name;
                do {
                    name = (1_700_000_000_000L + random.nextInt(1_000_000_000)) + extension;
                } while (named.contains(name));
                named.add(name);
                out.add(new StringData(name));
                return out;
            }
            case Constants.CONTROL_INPUT:
            case Constants.CONTROL_TEXTAREA:
                break;
            default:
                // Audio, video, ranking: no value the test sends.
                return out;
        }
        switch (prompt.getDataType()) {
            case Constants.DATATYPE_INTEGER: {
                if (count) {
                    for (int n : new int[]{2, 3, 1}) out.add(new IntegerData(n));
                    return out;
                }
                if (random.nextInt(100) < 35) out.add(new IntegerData(INTEGER_STRESS[random.nextInt(INTEGER_STRESS.length)]));
                for (int bound : new int[]{5, 10, 31, 50, 121, 200, 1000, 100_000}) out.add(new IntegerData(random.nextInt(bound)));
                for (int n : INTEGER_STRESS) out.add(new IntegerData(n));
                return out;
            }
            case Constants.DATATYPE_LONG: {
                out.add(new LongData(random.nextInt(1000)));
                return out;
            }
            case Constants.DATATYPE_DECIMAL: {
                if (random.nextInt(100) < 40) out.add(new DecimalData(DECIMAL_STRESS[random.nextInt(DECIMAL_STRESS.length)]));
                for (double scale : new double[]{1, 10, 60, 100, 1000}) {
                    double places = Math.pow(10, 1 + random.nextInt(3));
                    out.add(new DecimalData(Math.round(random.nextDouble() * scale * places) / places));
                }
                for (double d : DECIMAL_STRESS) out.add(new DecimalData(d));
                return out;
            }
            case Constants.DATATYPE_DATE: {
                // From a fixed span in the past, so a seed gives the same dates every day.
                LocalDate today = LocalDate.now();
                LocalDate from = LocalDate.of(2024, 1, 2);
                long span = LocalDate.of(2025, 6, 30).toEpochDay() - from.toEpochDay();
                List<LocalDate> days = new ArrayList<>();
                for (int k = 0; k < 4; k++) days.add(from.plusDays(random.nextInt((int) Math.max(1, span))));
                if (random.nextInt(100) < 25) days.add(0, LocalDate.of(2000, 2, 29));
                days.add(LocalDate.of(1999, 12, 31));
                days.add(today);
                for (LocalDate d : days) out.add(new DateData(Date.from(d.atStartOfDay(ZoneId.systemDefault()).toInstant())));
                return out;
            }
            case Constants.DATATYPE_TIME: {
                LocalDateTime t = LocalDate.of(1970, 1, 1).atTime(random.nextInt(24), random.nextInt(60), random.nextInt(60), random.nextInt(1000) * 1_000_000);
                out.add(new TimeData(Date.from(t.atZone(ZoneId.systemDefault()).toInstant())));
                return out;
            }
            case Constants.DATATYPE_DATE_TIME: {
                long from = LocalDate.of(2024, 1, 1).atStartOfDay(ZoneId.systemDefault()).toInstant().toEpochMilli();
                long to = LocalDate.of(2025, 6, 30).atStartOfDay(ZoneId.systemDefault()).toInstant().toEpochMilli();
                out.add(new DateTimeData(new Date(from + (long) (random.nextDouble() * (to - from)))));
                return out;
            }
            case Constants.DATATYPE_GEOPOINT: {
                out.add(new GeoPointData(point()));
                return out;
            }
            case Constants.DATATYPE_GEOTRACE: {
                StringBuilder trace = new StringBuilder();
                int n = 2 + random.nextInt(3);
                for (int k = 0; k < n; k++) trace.append(k == 0 ? "" : ";").append(text(point()));
                out.add(new GeoTraceData().cast(new UncastData(trace.toString())));
                return out;
            }
            case Constants.DATATYPE_GEOSHAPE: {
                double[] first = point();
                StringBuilder shape = new StringBuilder(text(first));
                int n = 2 + random.nextInt(3);
                for (int k = 0; k < n; k++) shape.append(';').append(text(point()));
                shape.append(';').append(text(first));
                out.add(new GeoShapeData().cast(new UncastData(shape.toString())));
                return out;
            }
            case Constants.DATATYPE_BARCODE: {
                out.add(new StringData(String.valueOf(1_000_000_000_000L + (long) (random.nextDouble() * 8_999_999_999_999L))));
                return out;
            }
            case Constants.DATATYPE_TEXT:
            case Constants.DATATYPE_NULL:
            case Constants.DATATYPE_UNSUPPORTED: {
                if (random.nextInt(100) < 30) out.add(new StringData(TEXT_STRESS[random.nextInt(TEXT_STRESS.length)]));
                out.add(new StringData(TEXT_PLAIN[random.nextInt(TEXT_PLAIN.length)]));
                StringBuilder digits = new StringBuilder();
                for (int k = 0, n = 8 + random.nextInt(5); k < n; k++) digits.append(random.nextInt(10));
                out.add(new StringData(digits.toString()));
                for (String s : TEXT_PLAIN) out.add(new StringData(s));
                return out;
            }
            default:
                return out;
        }
    }

    /** Latitude, longitude, altitude, accuracy: ordinary ones, or numbers Java writes in scientific notation. */
    private double[] point() {
        double lat = Math.round((random.nextDouble() * 120 - 60) * 1e6) / 1e6;
        double lon = Math.round((random.nextDouble() * 340 - 170) * 1e6) / 1e6;
        double alt = Math.round(random.nextDouble() * 3000 * 10) / 10.0;
        double acc = Math.round(random.nextDouble() * 20 * 10) / 10.0 + 0.1;
        switch (random.nextInt(6)) {
            case 0: return new double[]{5.0E-4, -1.0E-5, 1.5E7, 5.0E-4};
            case 1: return new double[]{lat, lon, 0.0, 0.0};
            case 2: return new double[]{-1.0E-4, lon, 123456789.0, 9.99E-4};
            default: return new double[]{lat, lon, alt, acc};
        }
    }

    private static String text(double[] p) {
        return p[0] + " " + p[1] + " " + p[2] + " " + p[3];
    }

    static String uuid(Random random) {
        long high = (random.nextLong() & ~0xF000L) | 0x4000L;
        long low = (random.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        return "uuid:" + new UUID(high, low);
    }

    private static void setInstanceID(FormDef fd, String id) {
        TreeElement root = fd.getMainInstance().getRoot();
        for (String meta : new String[]{"meta", "orx:meta"}) {
            TreeElement m = root.getChild(meta, 0);
            if (m == null) continue;
            for (String name : new String[]{"instanceID", "orx:instanceID"}) {
                TreeElement e = m.getChild(name, 0);
                if (e != null) e.setAnswer(new StringData(id));
            }
        }
    }

    /** The instance as Collect sends it: JavaRosa's serializer (non-relevant nodes left out). */
    static byte[] serialize(FormDef fd) throws Exception {
        ByteArrayPayload payload = (ByteArrayPayload) new XFormSerializingVisitor().createSerializedPayload(fd.getInstance());
        return payload.getPayloadStream().readAllBytes();
    }
}
