import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JavaRosa (the engine of ODK Collect, from the ODK Validate jar pyxform ships) as a judge of
 * filled-in forms, for the end-to-end tests: one process for a whole test run, reading one JSON
 * request a line on standard input and answering one JSON line on standard output.
 *
 * <pre>
 * {"op":"load","form":"k","xform":"&lt;h:html ...","files":{"villages.csv":"base64…"}} → {"ok":true}
 * {"op":"fill","form":"k","seed":7,"count":6}              → {"ok":true,"instances":[{"label":"…","xml":"…","files":["1700000123456.jpg"]}]}
 * {"op":"judge","form":"k","xml":"&lt;data ..."}             → {"ok":true,"valid":false,"failures":[{"question","path","reason","value"}]}
 * </pre>
 *
 * A request that fails answers {"ok":false,"error":"…"}. JavaRosa's own output goes to standard
 * error, so standard output carries the answers only.
 */
public final class FormJudge {
    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        LoadedForm.setUp();
        ObjectMapper json = new ObjectMapper();
        Map<String, LoadedForm> forms = new HashMap<>();
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = requests.readLine()) != null; ) {
            if (line.isBlank()) continue;
            Map<String, Object> reply = new LinkedHashMap<>();
            try {
                JsonNode request = json.readTree(line);
                String op = request.path("op").asText();
                String key = request.path("form").asText();
                switch (op) {
                    case "load": {
                        // The files the form names, as Collect downloads them from its manifest.
                        Map<String, byte[]> files = new LinkedHashMap<>();
                        request.path("files").fields().forEachRemaining(f -> files.put(f.getKey(), Base64.getDecoder().decode(f.getValue().asText())));
                        forms.put(key, new LoadedForm(request.path("xform").asText().getBytes(StandardCharsets.UTF_8), files));
                        break;
                    }
                    case "fill": {
                        LoadedForm form = known(forms, key);
                        List<Map<String, Object>> instances = new ArrayList<>();
                        // Each form its own numbers (and instanceIDs) from the one seed.
                        long seed = request.path("seed").asLong() * 31 + key.hashCode();
                        int count = request.path("count").asInt(1);
                        for (int k = 0; k < count; k++) {
                            for (FilledInstance instance : new Filler(form, seed * 1_000_003L + k).fillWithVariants(k)) {
                                Map<String, Object> one = new LinkedHashMap<>();
                                one.put("label", instance.label);
                                one.put("xml", new String(instance.xml, StandardCharsets.UTF_8));
                                one.put("files", instance.files);
                                instances.add(one);
                            }
                        }
                        reply.put("instances", instances);
                        break;
                    }
                    case "judge": {
                        LoadedForm form = known(forms, key);
                        List<Map<String, Object>> failures = new Judge(form).judge(request.path("xml").asText().getBytes(StandardCharsets.UTF_8));
                        reply.put("valid", failures.isEmpty());
                        reply.put("failures", failures);
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown op " + op);
                }
                reply.put("ok", true);
            } catch (Throwable t) {
                reply.clear();
                reply.put("ok", false);
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                reply.put("error", trace.toString());
            }
            answers.println(json.writeValueAsString(reply));
            answers.flush();
        }
    }

    private static LoadedForm known(Map<String, LoadedForm> forms, String key) {
        LoadedForm form = forms.get(key);
        if (form == null) throw new IllegalArgumentException("no form loaded as " + key);
        return form;
    }
}
